package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/commitlog-go/commitlog"
)

// handleFetch answers a consumer's Fetch (key 1), as Kafka's ReplicaManager.fetchMessages:
//
//   - each partition is read from its fetch offset below the bound of the isolation level (the
//     high watermark, or the last stable offset under read_committed, with the aborted
//     transactions of the span), up to its partition_max_bytes and the response's max_bytes,
//     the first batch of the response whole however large (KIP-74);
//   - the stored batches are sent unchanged, from the segment file to the socket with sendfile
//     on Linux (commitlog.BatchRange), never decoded or copied through the process;
//   - with fewer than min_bytes found, the fetch waits up to max_wait_ms for appends to any of
//     its partitions (Kafka's DelayedFetch), and Serve's end cuts the wait short;
//   - a fetch offset below the log start offset or past the log end offset is
//     OFFSET_OUT_OF_RANGE, a current_leader_epoch older than the partition's FENCED_LEADER_EPOCH
//     and newer UNKNOWN_LEADER_EPOCH (KIP-320).
//
// Fetch sessions (KIP-227) are declined as a broker whose session cache is full declines them:
// every response has session id 0, so clients send full fetch requests, which are answered in
// full. A follower's fetch (replica id 0 or more) is refused: this node has no followers.
func handleFetch(ctx context.Context, c *conn, r *request) (reply, error) {
	req := r.msg.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.ReplicaID >= 0 || req.ReplicaState.ID >= 0 {
		resp.ErrorCode = kerr.NotLeaderForPartition.Code
		return reply{msg: resp}, nil
	}
	level := commitlog.ReadUncommitted
	if req.IsolationLevel == 1 {
		level = commitlog.ReadCommitted
	}
	maxBytes := int64(req.MaxBytes)
	if r.version < 3 || maxBytes <= 0 {
		maxBytes = 1<<31 - 1
	}
	wait := time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond

	f := &fetch{c: c, req: req, level: level, maxBytes: maxBytes, byID: r.version >= 13}
	defer f.release()
	var timer <-chan time.Time
	for {
		changed, err := f.read()
		if err != nil {
			return reply{}, err
		}
		if f.bytes >= int64(req.MinBytes) || f.errored || wait <= 0 {
			break
		}
		if timer == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timer = t.C
		}
		if !f.await(ctx, changed, timer) {
			// Time is up, or Serve is ending: read once more and answer what there is.
			if _, err := f.read(); err != nil {
				return reply{}, err
			}
			break
		}
	}
	resp.Topics = f.topics
	return reply{msg: resp, fetch: f.payload()}, nil
}

// fetch is one Fetch request being answered.
type fetch struct {
	c        *conn
	req      *kmsg.FetchRequest
	level    commitlog.IsolationLevel
	maxBytes int64
	byID     bool // v13+: topics named by id

	topics  []kmsg.FetchResponseTopic
	ranges  []*commitlog.BatchRange // by partition, in response order; nil where none
	bytes   int64                   // batch bytes found
	errored bool                    // a partition has an error: answer at once, as Kafka does
}

// read looks every partition up again and reads what it holds, releasing what an earlier read
// found. It returns the partitions' change channels, taken before reading.
func (f *fetch) read() ([]<-chan struct{}, error) {
	f.release()
	f.topics = f.topics[:0]
	f.ranges = f.ranges[:0]
	f.bytes, f.errored = 0, false
	var changed []<-chan struct{}
	for _, rt := range f.req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t, terr := f.c.srv.requestTopic(rt.Topic, rt.TopicID, f.byID)
		if terr == nil && f.byID {
			st.Topic = t.Name()
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.RecordBatches = []byte{}
			var rng *commitlog.BatchRange
			p, err := partitionOf(t, terr, rp.Partition)
			if err == nil {
				changed = append(changed, p.Changed())
				rng, err = f.readPartition(p, rp, &sp)
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
				f.errored = true
			}
			st.Partitions = append(st.Partitions, sp)
			f.ranges = append(f.ranges, rng)
			if rng != nil {
				f.bytes += rng.Len()
			}
		}
		f.topics = append(f.topics, st)
	}
	return changed, nil
}

// readPartition reads one partition into sp, returning the batches' range (nil when none).
func (f *fetch) readPartition(p *commitlog.Partition, rp kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition) (*commitlog.BatchRange, error) {
	if rp.CurrentLeaderEpoch >= 0 {
		if epoch := leaderEpoch(p); rp.CurrentLeaderEpoch < epoch {
			return nil, commitlog.ErrFencedLeaderEpoch
		} else if rp.CurrentLeaderEpoch > epoch {
			return nil, commitlog.ErrUnknownLeaderEpoch
		}
	}
	hw := p.HighWatermark()
	bound := p.FetchBound(f.level)
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, p.LastStableOffset(), p.LogStartOffset()
	if rp.FetchOffset < sp.LogStartOffset || rp.FetchOffset > p.LogEndOffset() {
		return nil, commitlog.ErrOffsetOutOfRange
	}
	left := f.maxBytes - f.bytes
	limit := int64(rp.PartitionMaxBytes)
	if limit > left {
		limit = left
	}
	if rp.FetchOffset >= bound || (limit <= 0 && f.bytes > 0) {
		return nil, nil
	}
	// The first batch of the response comes whole however large (KIP-74); after it, a batch
	// that does not fit waits for the next fetch.
	rng, err := p.ReadRangeBelow(rp.FetchOffset, int(max(limit, 1)), bound)
	if err != nil {
		return nil, err
	}
	if rng.Len() == 0 || (f.bytes > 0 && rng.Len() > left) {
		rng.Close()
		return nil, nil
	}
	if f.level == commitlog.ReadCommitted {
		aborted, err := p.AbortedTransactions(rp.FetchOffset, rng.NextOffset())
		if err != nil {
			rng.Close()
			return nil, err
		}
		for _, a := range aborted {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			sp.AbortedTransactions = append(sp.AbortedTransactions, at)
		}
	}
	return rng, nil
}

// await waits for a change of any partition, the timer, or Serve's end; it reports whether a
// partition changed.
func (f *fetch) await(ctx context.Context, changed []<-chan struct{}, timer <-chan time.Time) bool {
	if len(changed) == 0 {
		select {
		case <-timer:
		case <-f.c.stopping:
		case <-ctx.Done():
		}
		return false
	}
	// One goroutine per partition beyond the first would cost more than the wait; a fetch of
	// many partitions wakes on the first one's change or a merged signal.
	merged := make(chan struct{})
	done := make(chan struct{})
	defer close(done)
	for _, ch := range changed[1:] {
		go func() {
			select {
			case <-ch:
				select {
				case merged <- struct{}{}:
				case <-done:
				}
			case <-done:
			}
		}()
	}
	select {
	case <-changed[0]:
		return true
	case <-merged:
		return true
	case <-timer:
	case <-f.c.stopping:
	case <-ctx.Done():
	}
	return false
}

// release closes the ranges of the last read.
func (f *fetch) release() {
	for i, rng := range f.ranges {
		if rng != nil {
			rng.Close()
			f.ranges[i] = nil
		}
	}
}

// payload hands the ranges read to the response writer, which closes them: the response's
// RecordBatches of each partition with a range get a placeholder that fetchPayload.write
// replaces with the range's bytes.
func (f *fetch) payload() *fetchPayload {
	var fp *fetchPayload
	i := 0
	for ti := range f.topics {
		for pi := range f.topics[ti].Partitions {
			rng := f.ranges[i]
			i++
			if rng == nil {
				continue
			}
			if fp == nil {
				fp = &fetchPayload{}
				if _, err := rand.Read(fp.mark[:12]); err != nil {
					// crypto/rand does not fail on Linux; a fixed mark still works, as the
					// placeholders are found in order.
					copy(fp.mark[:], "commitlog-fetch!")
				}
			}
			ph := make([]byte, placeholderLen)
			copy(ph, fp.mark[:12])
			binary.BigEndian.PutUint32(ph[12:], uint32(len(fp.ranges)))
			f.topics[ti].Partitions[pi].RecordBatches = ph
			fp.ranges = append(fp.ranges, rng)
		}
	}
	f.ranges = f.ranges[:0] // now the payload's to close
	return fp
}

// placeholderLen is the length of a placeholder of RecordBatches.
const placeholderLen = 16

// fetchPayload is the stored batches a Fetch response sends, written in place of the
// placeholders its encoding holds.
type fetchPayload struct {
	mark   [16]byte
	ranges []*commitlog.BatchRange
}

// write writes the frame b (size prefix not yet set, a response whose RecordBatches hold
// placeholders) to w, each placeholder replaced by its range's bytes and its length field by the
// range's length, and closes the ranges. The length field before a placeholder is the 4-byte
// NULLABLE_BYTES length before v12, the 1-byte COMPACT_NULLABLE_BYTES uvarint (17) from v12 on.
func (fp *fetchPayload) write(w net.Conn, b []byte, flexible bool) error {
	defer func() {
		for _, rng := range fp.ranges {
			rng.Close()
		}
	}()
	type piece struct {
		from, at int    // b[from:at] precedes the range's length field
		lenField []byte // the range's length field
		rng      *commitlog.BatchRange
	}
	pieces := make([]piece, 0, len(fp.ranges))
	total := int64(len(b)) - 4
	pos := 0
	for i, rng := range fp.ranges {
		var ph [placeholderLen]byte
		copy(ph[:], fp.mark[:12])
		binary.BigEndian.PutUint32(ph[12:], uint32(i))
		at := bytes.Index(b[pos:], ph[:])
		if at < 0 {
			return fmt.Errorf("fetch response: placeholder %d not found", i)
		}
		at += pos
		var lenField []byte
		lenFieldLen := 4
		switch {
		case !flexible && at-4 >= pos && binary.BigEndian.Uint32(b[at-4:at]) == placeholderLen:
			lenField = binary.BigEndian.AppendUint32(nil, uint32(rng.Len()))
		case flexible && at-1 >= pos && b[at-1] == placeholderLen+1:
			lenField = binary.AppendUvarint(nil, uint64(rng.Len())+1)
			lenFieldLen = 1
		default:
			return fmt.Errorf("fetch response: no length field before placeholder %d", i)
		}
		pieces = append(pieces, piece{from: pos, at: at - lenFieldLen, lenField: lenField, rng: rng})
		total += int64(len(lenField)) - int64(lenFieldLen) + rng.Len() - placeholderLen
		pos = at + placeholderLen
	}
	if total > 1<<31-1 {
		return fmt.Errorf("fetch response of %d bytes", total)
	}
	binary.BigEndian.PutUint32(b, uint32(total))
	bufs := make(net.Buffers, 0, 2)
	for _, pc := range pieces {
		bufs = append(bufs[:0], b[pc.from:pc.at], pc.lenField)
		if _, err := bufs.WriteTo(w); err != nil {
			return err
		}
		n, err := pc.rng.WriteTo(w)
		if err != nil {
			return fmt.Errorf("fetch response: send batches: %w", err)
		}
		if n != pc.rng.Len() {
			return fmt.Errorf("fetch response: sent %d of %d batch bytes", n, pc.rng.Len())
		}
	}
	_, err := w.Write(b[pos:])
	return err
}

// The batches go to the socket through BatchRange.WriteTo, which uses sendfile on Linux.
var _ io.WriterTo = (*commitlog.BatchRange)(nil)
