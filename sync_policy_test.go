package commitlog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSyncPolicyResolve pins the one chain of the sync policy, as resolveSync resolves it: a log's
// own policy wins over the inherited (WithSync's) one, SyncDefault takes the inherited one, and
// SyncDefault in both is SyncAlways; and what the write path asks of each resolved policy.
func TestSyncPolicyResolve(t *testing.T) {
	const tick = 5 * time.Millisecond
	cases := []struct {
		own, inherited SyncPolicy
		want           SyncPolicy
	}{
		{SyncDefault, SyncDefault, SyncAlways},
		{SyncDefault, SyncNever, SyncNever},
		{SyncDefault, SyncInterval(tick), SyncInterval(tick)},
		{SyncNever, SyncDefault, SyncNever},
		{SyncNever, SyncAlways, SyncNever},
		{SyncAlways, SyncNever, SyncAlways},
		{SyncInterval(tick), SyncNever, SyncInterval(tick)},
	}
	for _, c := range cases {
		require.Equal(t, syncPolicy{c.want}, resolveSync(c.own, c.inherited), "own %v, inherited %v", c.own, c.inherited)
	}

	always, never, interval := syncPolicy{SyncAlways}, syncPolicy{SyncNever}, syncPolicy{SyncInterval(tick)}
	for _, c := range []struct {
		p                                syncPolicy
		waits, rollSyncs, flusher, valid bool
		every                            time.Duration
	}{
		{always, true, true, false, true, 0},
		{never, false, false, true, true, 0},
		{interval, false, false, true, true, tick},
		{syncPolicy{SyncPolicy(-3)}, false, false, true, false, 0},
	} {
		require.Equal(t, c.waits, c.p.appendWaits(), "%v", c.p.p)
		require.Equal(t, c.rollSyncs, c.p.rollSyncs(), "%v", c.p.p)
		require.Equal(t, c.flusher, c.p.runsFlusher(), "%v", c.p.p)
		require.Equal(t, c.every, c.p.flushInterval(), "%v", c.p.p)
		require.Equal(t, c.valid, c.p.valid(), "%v", c.p.p)
	}
	require.Equal(t, SyncAlways, SyncInterval(0), "a period that is not positive is SyncAlways")
}

// TestSyncPolicyOfLog checks the policy an OpenLog resolves, for each way of setting it: its
// LogConfig, WithSync, both (the log's own wins), neither; and that Config shows the same.
func TestSyncPolicyOfLog(t *testing.T) {
	cases := []struct {
		name string
		cfg  SyncPolicy
		opts []Option
		want SyncPolicy
	}{
		{"neither", SyncDefault, nil, SyncAlways},
		{"log config", SyncNever, nil, SyncNever},
		{"option", SyncDefault, []Option{WithSync(SyncInterval(time.Hour))}, SyncInterval(time.Hour)},
		{"log config over option", SyncNever, []Option{WithSync(SyncAlways)}, SyncNever},
		{"option of SyncDefault changes nothing", SyncDefault, []Option{WithSync(SyncNever), WithSync(SyncDefault)}, SyncNever},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Sync = c.cfg
			l, err := OpenLog(t.TempDir(), cfg, c.opts...)
			require.NoError(t, err)
			defer l.Close()
			require.Equal(t, syncPolicy{c.want}, l.sync)
			require.Equal(t, c.want, l.Config().Sync)
			require.Equal(t, c.want != SyncAlways, l.flusher.stop != nil, "a flusher runs under SyncNever and SyncInterval only")
		})
	}
}

// TestSyncPolicyOfTopic checks the policy a store's partitions resolve from the topic's config
// and the store's WithSync, and that the topic stores its own setting, not the resolved policy:
// reopened under another WithSync, a topic of SyncDefault follows it, one with its own keeps it.
func TestSyncPolicyOfTopic(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, WithSync(SyncNever))
	require.NoError(t, err)
	inherits, err := s.CreateTopic("inherits", TopicConfig{Partitions: 2})
	require.NoError(t, err)
	own, err := s.CreateTopic("own", TopicConfig{LogConfig: LogConfig{Sync: SyncInterval(time.Hour)}})
	require.NoError(t, err)
	requireTopicSync := func(tp *Topic, want SyncPolicy) {
		t.Helper()
		require.Equal(t, want, tp.Config().Sync, "topic %s", tp.Name())
		for id := range tp.PartitionCount() {
			p, err := tp.Partition(id)
			require.NoError(t, err)
			require.Equal(t, syncPolicy{want}, p.log.sync, "topic %s partition %d", tp.Name(), id)
		}
	}
	requireTopicSync(inherits, SyncNever)
	requireTopicSync(own, SyncInterval(time.Hour))
	require.Equal(t, SyncDefault, s.configs["inherits"].Sync, "stored as given")
	require.Equal(t, SyncInterval(time.Hour), s.configs["own"].Sync)
	require.NoError(t, s.Close())

	s, err = Open(dir, WithSync(SyncAlways))
	require.NoError(t, err)
	defer s.Close()
	inherits, err = s.Topic("inherits")
	require.NoError(t, err)
	own, err = s.Topic("own")
	require.NoError(t, err)
	requireTopicSync(inherits, SyncAlways)
	requireTopicSync(own, SyncInterval(time.Hour))
}

// TestSyncPolicyInvalid checks that a value that is no SyncPolicy is ErrInvalidConfig wherever it
// is given: a log's config, WithSync for a log that inherits it, a topic's config, and a store's
// WithSync for a topic that inherits it; nothing is created.
func TestSyncPolicyInvalid(t *testing.T) {
	bad := SyncPolicy(-3)
	t.Run("log config", func(t *testing.T) {
		_, err := OpenLog(t.TempDir(), LogConfig{Sync: bad})
		require.ErrorIs(t, err, ErrInvalidConfig)
		require.ErrorContains(t, err, "Sync = SyncPolicy(-3)")
	})
	t.Run("option", func(t *testing.T) {
		_, err := OpenLog(t.TempDir(), LogConfig{}, WithSync(bad))
		require.ErrorIs(t, err, ErrInvalidConfig)
		l, err := OpenLog(t.TempDir(), LogConfig{Sync: SyncNever}, WithSync(bad))
		require.NoError(t, err, "a log with its own policy does not inherit the option's")
		require.NoError(t, l.Close())
	})
	t.Run("topic config", func(t *testing.T) {
		s, err := OpenInMemory()
		require.NoError(t, err)
		defer s.Close()
		_, err = s.CreateTopic("t", TopicConfig{LogConfig: LogConfig{Sync: bad}})
		require.ErrorIs(t, err, ErrInvalidConfig)
		_, err = s.Topic("t")
		require.ErrorIs(t, err, ErrUnknownTopic)
	})
	t.Run("store option", func(t *testing.T) {
		s, err := OpenInMemory(WithSync(bad))
		require.NoError(t, err)
		defer s.Close()
		_, err = s.CreateTopic("t", TopicConfig{})
		require.ErrorIs(t, err, ErrInvalidConfig)
		_, err = s.CreateTopic("u", TopicConfig{LogConfig: LogConfig{Sync: SyncAlways}})
		require.NoError(t, err)
	})
}
