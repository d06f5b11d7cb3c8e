package checkpoint_test

import (
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/commitlog-go/commitlog/internal/checkpoint"
	"github.com/commitlog-go/commitlog/internal/faultfs"
	"github.com/commitlog-go/commitlog/internal/fsys"
)

// TestWriteNoSync: WriteNoSync writes the bytes Write writes, through the temporary file, with
// no file or directory sync: open, write, close, rename, nothing else. A process kill keeps the
// new contents; a power loss keeps what was durable before (here the synced Write's).
func TestWriteNoSync(t *testing.T) {
	each(t, func(t *testing.T, fsy fsys.FS, dir string) {
		name := filepath.Join(dir, "cp")
		require.NoError(t, checkpoint.WriteNoSync(fsy, name, []byte("123456789")))
		require.Equal(t, "commitlog-checkpoint 1\n00000009 e3069283\n123456789", string(readRaw(t, fsy, name)))
		_, err := fsy.Stat(name + checkpoint.TempSuffix)
		require.ErrorIs(t, err, fs.ErrNotExist)
	})

	inner := fsys.NewMemory()
	require.NoError(t, inner.MkdirAll("/state", 0o755)) // durable: made before the fault FS saw it
	ffs := faultfs.New(inner, 1)
	defer ffs.Release()
	require.NoError(t, checkpoint.Write(ffs, "/state/cp", []byte("old")))
	before := len(ffs.Ops())
	require.NoError(t, checkpoint.WriteNoSync(ffs, "/state/cp", []byte("new")))
	var kinds []faultfs.Kind
	for _, op := range ffs.Ops()[before:] {
		kinds = append(kinds, op.Kind)
	}
	require.Equal(t, []faultfs.Kind{faultfs.OpenFile, faultfs.Write, faultfs.Close, faultfs.Rename}, kinds)

	for mode, want := range map[faultfs.Mode]string{faultfs.ProcessKill: "new", faultfs.PowerLossDrop: "old", faultfs.PowerLossKeep: "old"} {
		img, err := ffs.CrashImage(mode)
		require.NoError(t, err)
		got, err := checkpoint.Read(img, "/state/cp")
		require.NoError(t, err, mode)
		require.Equal(t, want, string(got), mode)
	}
}
