package mirror_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/mirror"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"
)

// The conversions share memory both ways (queue's TestTypesMirrorStore
// checks the layouts); an option and the paused levels keep their values.
func TestConversions(t *testing.T) {
	info := &store.Info{ID: "a", Type: "mail", Level: 2, State: store.StateActive, Headers: map[string]string{"k": "v"}}
	ti := mirror.TaskInfo(info)
	require.Equal(t, unsafe.Pointer(info), unsafe.Pointer(ti))
	require.Equal(t, "a", ti.ID)
	require.Equal(t, queue.StateActive, ti.State)
	require.Equal(t, "v", ti.Headers["k"])
	require.Same(t, info, mirror.Info(ti))
	require.Nil(t, mirror.TaskInfo(nil))

	opt := mirror.Option(store.Timeout(7))
	require.Equal(t, unsafe.Sizeof(store.Option(nil)), unsafe.Sizeof(opt))
	var tk store.Task
	require.NoError(t, (*(*store.Option)(unsafe.Pointer(&opt)))(nil, &tk))
	require.EqualValues(t, 7, tk.Timeout)

	require.Nil(t, mirror.PauseModes(nil))
	require.Equal(t, map[int]queue.PauseMode{0: queue.PauseWait, 2: queue.PausePreempt},
		mirror.PauseModes(map[int]store.PauseMode{0: store.PauseWait, 2: store.PausePreempt}))
}
