package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// replicationFileName holds a partition's replication checkpoint, in the partition folder beside
// the log's own state file. Kafka keeps the high watermarks of a log directory's partitions in one
// replication-offset-checkpoint file (ReplicaManager's highWatermarkCheckpoints); a partition
// here keeps its own, so that its folder is all there is of it. The name starts with
// "commitlog-", as every state file of ours does: Kafka's tools ignore it.
const replicationFileName = "commitlog-replication"

// replicationState is what a Partition checkpoints about its replication: whether it keeps a high
// watermark of its own (it has followers or is one), that high watermark, and the leader epoch of
// its last role, so that a restarted replica opens as a follower readable up to it and still
// refuses older epochs. A partition that is not replicated has high watermark -1 in the file.
type replicationState struct {
	replicated    bool
	highWatermark int64 // when replicated
	leaderEpoch   int32 // the epoch of the partition's last role, when replicated
}

const replicationFormat = "high-watermark %d\nleader-epoch %d\n"

func (st replicationState) encode() []byte {
	hw, epoch := int64(-1), int32(0)
	if st.replicated {
		hw, epoch = st.highWatermark, st.leaderEpoch
	}
	return fmt.Appendf(nil, replicationFormat, hw, epoch)
}

func decodeReplicationState(b []byte) (replicationState, error) {
	var hw int64
	var epoch int32
	r := bytes.NewReader(b)
	_, err := fmt.Fscanf(r, replicationFormat, &hw, &epoch)
	if err != nil || r.Len() > 0 || hw < -1 || epoch < 0 {
		return replicationState{}, fmt.Errorf("%w: malformed replication state %q", checkpoint.ErrCorrupt, b)
	}
	if hw < 0 {
		return replicationState{}, nil
	}
	return replicationState{replicated: true, highWatermark: hw, leaderEpoch: epoch}, nil
}

// readReplicationCheckpoint returns the replication checkpoint in the partition folder dir and
// whether there was one. A missing or corrupt file (logged) reads as none.
func readReplicationCheckpoint(fsy fsys.FS, dir string, logger *slog.Logger) (replicationState, bool) {
	return readCheckpointed(fsy, filepath.Join(dir, replicationFileName), decodeReplicationState, logger,
		"replication checkpoint unreadable; the partition opens as not replicated")
}

// openPartition opens partition id of topic in dir: its replication checkpoint, then its log,
// told whether the partition is replicated (a log no replication drives starts a leader epoch of
// its own after an unclean shutdown). A store written before the checkpoint existed keeps the
// replication state in the log's state file: the log hands it up, and the partition writes it to
// its own checkpoint before the log stops writing it back, so that no crash loses it.
func openPartition(topic string, id int32, dir string, cfg LogConfig, o options, onChange func()) (*Partition, error) {
	saved, ok := readReplicationCheckpoint(o.fs, dir, o.logger)
	o.logDirTP = topicPartition{topic: topic, partition: id}
	l, err := openLog(dir, cfg, o, false, saved.replicated)
	if err != nil {
		return nil, err
	}
	legacy := l.owner.legacyReplication()
	start := saved
	if !ok && legacy.present {
		start = replicationState{replicated: true, highWatermark: legacy.highWatermark, leaderEpoch: legacy.leaderEpoch}
	}
	var cleaned func(int64) error
	if cp := o.cleanerPoints; cp != nil {
		if point, ok := cp.get(topic, id); ok {
			l.setCleanerPoint(point)
		}
		cleaned = func(point int64) error { return cp.set(topic, id, point) }
	}
	p := newPartition(topic, id, l, onChange, start, saved, cleaned)
	p.queue.init(o)
	if !ok && legacy.present {
		if err := p.saveCheckpoint(); err != nil {
			return nil, errors.Join(fmt.Errorf("commitlog: checkpoint replication state: %w", err), l.Close())
		}
	}
	l.owner.dropLegacyReplication()
	return p, nil
}

// replicationNow returns the replication state to checkpoint now.
func (p *Partition) replicationNow() replicationState {
	if !p.replicated.Load() {
		return replicationState{}
	}
	return replicationState{replicated: true, highWatermark: max(p.hw.Load(), 0), leaderEpoch: max(p.roleEpoch.Load(), 0)}
}

// saveCheckpoint writes the replication checkpoint atomically (temp file, fsync, rename,
// directory fsync) when it differs from the one last written. The log calls it after each of its
// state checkpoints (logHooks.checkpointed), so the high watermark is saved as often as the log's
// recovery point, and at every role change, whose Log.saveState waits for it.
func (p *Partition) saveCheckpoint() error {
	p.ckptMu.Lock()
	defer p.ckptMu.Unlock()
	st := p.replicationNow()
	if st == p.ckptSaved {
		return nil
	}
	if err := checkpoint.Write(p.log.fs, filepath.Join(p.log.dir, replicationFileName), st.encode()); err != nil {
		return err
	}
	p.ckptSaved = st
	return nil
}

// retentionLimit is the partition's logHooks.retentionLimit: its high watermark when replicated.
func (p *Partition) retentionLimit() int64 {
	if !p.replicated.Load() {
		return -1
	}
	return p.hw.Load()
}
