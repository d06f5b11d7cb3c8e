// Command exactlyonce shows consume-transform-produce exactly once: orders are read from one
// topic, turned into invoices in another, and the reader's position moves with the invoices, in
// one transaction, so that a failure anywhere leaves either both or neither.
//
// It writes six orders to the topic "orders", then runs the loop: a transactional producer and
// a named reader "invoicer" of "orders"; for each batch of two orders it calls Begin, appends an
// invoice per order to "invoices", commits the reader's position with CommitReaderPositions and
// calls Commit. The second batch's first attempt fails (on purpose) and is aborted; the reader
// goes back to its committed position and the batch is done again. Last, a ReadCommitted reader
// of "invoices" prints what it sees (every invoice once, none of the aborted attempt), and the
// reader's committed positions are printed.
//
//	go run ./examples/exactlyonce                 # in a temporary folder, removed at the end
//	go run ./examples/exactlyonce -dir eo-data    # kept, to look at the files
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/commitlog-go/commitlog"
)

const (
	ordersTopic   = "orders"
	invoicesTopic = "invoices"
	readerName    = "invoicer"
	batchSize     = 2
)

// orders are the input: key, then item, quantity and unit price in cents.
var orders = []struct {
	key, item  string
	qty, cents int
}{
	{"order-1", "widget", 3, 250},
	{"order-2", "gadget", 1, 1999},
	{"order-3", "sprocket", 12, 75},
	{"order-4", "widget", 2, 250},
	{"order-5", "gizmo", 5, 420},
	{"order-6", "gadget", 2, 1999},
}

func main() {
	dir := flag.String("dir", "", "the store's folder, kept after the run (default: a temporary folder, removed)")
	flag.Parse()
	if err := run(context.Background(), *dir, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "exactlyonce:", err)
		os.Exit(1)
	}
}

// errSimulated is the failure the second batch's first attempt meets.
var errSimulated = errors.New("simulated failure before commit")

// run does the whole example in the store at dir (a temporary folder, removed, when dir is
// empty) and writes its report to w.
func run(ctx context.Context, dir string, w io.Writer) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "commitlog-exactlyonce-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	s, err := commitlog.Open(dir)
	if err != nil {
		return err
	}
	defer s.Close()
	in, err := s.CreateTopic(ordersTopic, commitlog.TopicConfig{Partitions: 1})
	if errors.Is(err, commitlog.ErrTopicExists) {
		return fmt.Errorf("%s already holds a run of this example; give a new -dir: %w", dir, err)
	}
	if err != nil {
		return err
	}
	out, err := s.CreateTopic(invoicesTopic, commitlog.TopicConfig{Partitions: 1})
	if err != nil {
		return err
	}

	// The input.
	recs := make([]*commitlog.Record, len(orders))
	for i, o := range orders {
		recs[i] = &commitlog.Record{Key: []byte(o.key), Value: fmt.Appendf(nil, "%s,%d,%d", o.item, o.qty, o.cents)}
	}
	if err := in.Append(ctx, recs...); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d orders at offsets %d-%d\n", ordersTopic, len(recs), recs[0].Offset, recs[len(recs)-1].Offset)

	// The loop: one transactional producer, one named reader.
	p, err := s.NewProducer(ctx, commitlog.ProducerConfig{TransactionalID: "invoicer"})
	if err != nil {
		return err
	}
	defer p.Close()
	r, err := in.NewReader(commitlog.ReaderConfig{Name: readerName, Start: commitlog.Earliest})
	if err != nil {
		return err
	}
	defer r.Close()
	failOnce := true
	for txn := 1; ; txn++ {
		batch, err := next(ctx, r, batchSize)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			break // every order read
		}
		invoices, err := transact(ctx, p, batch, txn == 2 && failOnce)
		first, last := batch[0].Offset, batch[len(batch)-1].Offset
		if errors.Is(err, errSimulated) {
			failOnce = false
			why := err
			// The transaction's invoices are in the log, never to be read committed: abort, and
			// read the batch again from the committed position.
			if err := p.Abort(ctx); err != nil {
				return err
			}
			committed, err := s.CommittedPositions(readerName)
			if err != nil {
				return err
			}
			back := committed[ordersTopic][0]
			if err := r.Seek(0, back); err != nil {
				return err
			}
			fmt.Fprintf(w, "txn %d: orders %d-%d -> invoices %d-%d, aborted (%v); reader back to %d\n",
				txn, first, last, invoices[0].Offset, invoices[len(invoices)-1].Offset, why, back)
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "txn %d: orders %d-%d -> invoices %d-%d, reader position %d, committed\n",
			txn, first, last, invoices[0].Offset, invoices[len(invoices)-1].Offset, last+1)
	}

	// What a ReadCommitted reader of the output sees, and a ReadUncommitted one.
	part, err := out.Partition(0)
	if err != nil {
		return err
	}
	committed, err := readAll(ctx, out, commitlog.ReadCommitted)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s, read_committed: %d records below the last stable offset %d\n", invoicesTopic, len(committed), part.LastStableOffset())
	for _, rec := range committed {
		fmt.Fprintf(w, "  %2d  %s\n", rec.Offset, rec.Value)
	}
	uncommitted, err := readAll(ctx, out, commitlog.ReadUncommitted)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s, read_uncommitted: %d records (the aborted attempt's %d too)\n", invoicesTopic,
		len(uncommitted), len(uncommitted)-len(committed))

	positions, err := s.CommittedPositions(readerName)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "reader %q committed position: %s partition 0 at %d (of %d orders)\n", readerName, ordersTopic,
		positions[ordersTopic][0], len(orders))
	return nil
}

// next returns up to n records that r can return now, without waiting for more: a context that
// is already done makes Next return a record when one is there and ctx's error when none is.
func next(ctx context.Context, r *commitlog.Reader, n int) ([]*commitlog.Record, error) {
	done, cancel := context.WithCancel(ctx)
	cancel()
	var out []*commitlog.Record
	for len(out) < n {
		rec, err := r.Next(done)
		if errors.Is(err, context.Canceled) {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// transact turns a batch of orders into invoices in one transaction: Begin, the invoices to
// "invoices", the reader's position past the batch, Commit. With fail set it stops before
// CommitReaderPositions with errSimulated, leaving the transaction open for the caller to abort.
// It returns the invoices, their offsets set.
func transact(ctx context.Context, p *commitlog.Producer, batch []*commitlog.Record, fail bool) ([]*commitlog.Record, error) {
	if err := p.Begin(); err != nil {
		return nil, err
	}
	invoices := make([]*commitlog.Record, len(batch))
	for i, rec := range batch {
		inv, err := invoice(rec)
		if err != nil {
			return nil, err
		}
		invoices[i] = inv
	}
	if err := p.Append(ctx, invoicesTopic, invoices...); err != nil {
		return nil, err
	}
	if fail {
		return invoices, errSimulated
	}
	next := batch[len(batch)-1].Offset + 1
	if err := p.CommitReaderPositions(ctx, readerName, ordersTopic, map[int32]int64{0: next}); err != nil {
		return nil, err
	}
	return invoices, p.Commit(ctx)
}

// invoice transforms an order ("item,qty,cents") into its invoice.
func invoice(order *commitlog.Record) (*commitlog.Record, error) {
	f := strings.Split(string(order.Value), ",")
	if len(f) != 3 {
		return nil, fmt.Errorf("order %s at %d: %q", order.Key, order.Offset, order.Value)
	}
	qty, err := strconv.Atoi(f[1])
	if err != nil {
		return nil, err
	}
	cents, err := strconv.Atoi(f[2])
	if err != nil {
		return nil, err
	}
	total := qty * cents
	return &commitlog.Record{Key: order.Key, Value: fmt.Appendf(nil, "%s: %d x %s = %d.%02d", order.Key, qty, f[0], total/100, total%100)}, nil
}

// readAll reads every record of topic t visible at isolation level iso, from the start.
func readAll(ctx context.Context, t *commitlog.Topic, iso commitlog.IsolationLevel) ([]*commitlog.Record, error) {
	r, err := t.NewReader(commitlog.ReaderConfig{Start: commitlog.Earliest, Isolation: iso})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []*commitlog.Record
	for {
		batch, err := next(ctx, r, 100)
		if err != nil || len(batch) == 0 {
			return out, err
		}
		out = append(out, batch...)
	}
}
