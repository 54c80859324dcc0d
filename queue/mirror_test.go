package queue

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/store"
)

// twins are the public types and their twins in internal/store, which
// mirror.go converts between by pointer.
var twins = []struct{ pub, st reflect.Type }{
	{reflect.TypeFor[TaskInfo](), reflect.TypeFor[store.Info]()},
	{reflect.TypeFor[State](), reflect.TypeFor[store.State]()},
	{reflect.TypeFor[Config](), reflect.TypeFor[store.Config]()},
	{reflect.TypeFor[Option](), reflect.TypeFor[struct{ apply store.Option }]()},
	{reflect.TypeFor[Stats](), reflect.TypeFor[store.Stats]()},
	{reflect.TypeFor[LevelStats](), reflect.TypeFor[store.LevelStats]()},
	{reflect.TypeFor[Rates](), reflect.TypeFor[store.Rates]()},
	{reflect.TypeFor[WorkerInfo](), reflect.TypeFor[store.WorkerInfo]()},
	{reflect.TypeFor[WorkerPool](), reflect.TypeFor[store.WorkerPool]()},
	{reflect.TypeFor[FeedEvent](), reflect.TypeFor[store.FeedEvent]()},
	{reflect.TypeFor[FeedKind](), reflect.TypeFor[store.FeedKind]()},
	{reflect.TypeFor[PauseMode](), reflect.TypeFor[store.PauseMode]()},
	{reflect.TypeFor[RequeueDeadOptions](), reflect.TypeFor[store.RequeueDeadOptions]()},
}

// Each public type has its twin's memory layout, field for field: the
// same names in the same order at the same offsets, of the same types or
// of twins. The pointer conversions of mirror.go rely on it; a field
// added to one side only fails here.
func TestTypesMirrorStore(t *testing.T) {
	pairs := map[[2]reflect.Type]bool{}
	for _, tw := range twins {
		pairs[[2]reflect.Type{tw.pub, tw.st}] = true
	}
	for _, tw := range twins {
		t.Run(tw.pub.Name(), func(t *testing.T) {
			requireTwins(t, pairs, tw.pub.Name(), tw.pub, tw.st)
		})
	}
}

// requireTwins fails unless a (public) and b (the store's) have one
// layout; at names the path to them.
func requireTwins(t *testing.T, pairs map[[2]reflect.Type]bool, at string, a, b reflect.Type) {
	t.Helper()
	if a == b {
		return
	}
	require.Equal(t, a.Kind(), b.Kind(), "%s: kind", at)
	require.Equal(t, a.Size(), b.Size(), "%s: size", at)
	require.Equal(t, a.Align(), b.Align(), "%s: alignment", at)
	if a.PkgPath() != "" && a.PkgPath() != b.PkgPath() {
		require.True(t, pairs[[2]reflect.Type{a, b}], "%s: %v and %v are not twins", at, a, b)
	}
	switch a.Kind() {
	case reflect.Struct:
		require.Equal(t, a.NumField(), b.NumField(), "%s: fields", at)
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			require.Equal(t, fa.Name, fb.Name, "%s: field %d", at, i)
			require.Equal(t, fa.Offset, fb.Offset, "%s.%s: offset", at, fa.Name)
			requireTwins(t, pairs, at+"."+fa.Name, fa.Type, fb.Type)
		}
	case reflect.Slice, reflect.Pointer, reflect.Array:
		requireTwins(t, pairs, at+"[]", a.Elem(), b.Elem())
	case reflect.Map:
		requireTwins(t, pairs, at+" key", a.Key(), b.Key())
		requireTwins(t, pairs, at+" value", a.Elem(), b.Elem())
	case reflect.Func, reflect.Interface, reflect.Chan:
		require.Equal(t, a, b, "%s: only the same func, interface or chan type is a twin", at)
	}
}

// Every field survives each conversion of mirror.go with its value: a
// field that a conversion copies by name (Stats) and forgets fails here.
func TestMirrorConversionsKeepEveryField(t *testing.T) {
	var info store.Info
	fill(reflect.ValueOf(&info).Elem(), new(int))
	requireSameJSON(t, &info, taskInfo(&info))
	tk := &store.Task{Info: info}
	require.Same(t, taskInfo(&tk.Info), taskInfos([]*store.Task{nil, tk})[1])

	var full store.Task
	fill(reflect.ValueOf(&full).Elem(), new(int))
	requireSameJSON(t, &full, detail(&full))
	require.Nil(t, detail(nil))

	var st store.Stats
	fill(reflect.ValueOf(&st).Elem(), new(int))
	requireSameJSON(t, &st, stats(&st))
	require.Nil(t, stats(nil))

	evs := make([]store.FeedEvent, 2)
	fill(reflect.ValueOf(evs), new(int))
	requireSameJSON(t, evs, mirrorSlice[FeedEvent](evs))
	ws := make([]store.WorkerInfo, 2)
	fill(reflect.ValueOf(ws), new(int))
	requireSameJSON(t, ws, mirrorSlice[WorkerInfo](ws))
	require.Nil(t, mirrorSlice[WorkerInfo]([]store.WorkerInfo(nil)))

	var got *store.Task
	opts := storeOptions([]Option{ID("x"), Level(0)})
	require.Len(t, opts, 2)
	got = &store.Task{}
	require.NoError(t, opts[0](nil, got))
	require.Equal(t, "x", got.ID)
}

// The constants are the store's.
func TestConstantsMirrorStore(t *testing.T) {
	require.Equal(t, []State{StatePending, StateActive, StateScheduled, StateRetry, StateDone, StateDead},
		[]State{State(store.StatePending), State(store.StateActive), State(store.StateScheduled),
			State(store.StateRetry), State(store.StateDone), State(store.StateDead)})
	require.Equal(t, []FeedKind{FeedPreempt, FeedGaveWay, FeedResumed},
		[]FeedKind{FeedKind(store.FeedPreempt), FeedKind(store.FeedGaveWay), FeedKind(store.FeedResumed)})
	require.Equal(t, []PauseMode{NotPaused, PauseWait, PausePreempt},
		[]PauseMode{PauseMode(store.NotPaused), PauseMode(store.PauseWait), PauseMode(store.PausePreempt)})
	for _, m := range []PauseMode{NotPaused, PauseWait, PausePreempt, 7} {
		require.Equal(t, store.PauseMode(m).String(), m.String())
	}
	require.Equal(t, store.DefaultMaxRetries, DefaultMaxRetries)
	require.Equal(t, store.AllLevels, AllLevels)
	require.Equal(t, store.RateWindow, RateWindow)
}

// fill sets every field of v, at any depth, to a value of its own that is
// not zero (one element in each slice and map), counting on n.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint8:
		v.SetUint(uint64(*n % 256))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.UnixMilli(int64(*n) * 1000).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	}
}

// requireSameJSON fails unless a and b encode alike: the same field names
// with the same values.
func requireSameJSON(t *testing.T, a, b any) {
	t.Helper()
	ja, err := json.Marshal(a)
	require.NoError(t, err)
	jb, err := json.Marshal(b)
	require.NoError(t, err)
	require.JSONEq(t, string(ja), string(jb))
	require.NotContains(t, string(ja), `""`, "fill left a field empty")
}
