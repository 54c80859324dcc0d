package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Level's Options of the first levels are made once, so passing Level(l)
// to an Enqueue allocates nothing; past them, and below 0, each is made
// on call, and each sets or refuses its own level.
func TestLevelOptions(t *testing.T) {
	n := testing.AllocsPerRun(100, func() { _ = Level(2) })
	require.Zero(t, n, "Level(2) allocates")
	c := &Store{cfg: Config{Levels: 40}}
	for _, l := range []int{0, 1, 15, 16, 39} {
		var tk Task
		require.NoError(t, Level(l)(c, &tk), "level %d", l)
		require.Equal(t, l, tk.Level)
	}
	for _, l := range []int{-1, 40, 100} {
		var tk Task
		require.ErrorIs(t, Level(l)(c, &tk), ErrInvalidLevel, "level %d", l)
	}
}
