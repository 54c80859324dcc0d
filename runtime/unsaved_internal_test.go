package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The warning of a preempted run that saved no checkpoint is logged at
// most once a minute per task type; the next line says how many were not
// logged in between, and other types are limited on their own.
func TestUnsavedLogOncePerTypePerMinute(t *testing.T) {
	var u unsavedLog
	t0 := time.Unix(1_000_000, 0)
	ok, skipped := u.allow("report", t0)
	require.True(t, ok, "the first of a type is logged")
	require.Zero(t, skipped)
	for i := 1; i <= 3; i++ {
		ok, _ = u.allow("report", t0.Add(time.Duration(i)*10*time.Second))
		require.False(t, ok, "a second line of the type within the minute, after %ds", i*10)
	}
	ok, skipped = u.allow("import", t0.Add(30*time.Second))
	require.True(t, ok, "another type has a limit of its own")
	require.Zero(t, skipped)
	ok, skipped = u.allow("report", t0.Add(time.Minute))
	require.True(t, ok, "logged again once the minute passed")
	require.Equal(t, 3, skipped, "the runs not logged in between")
	ok, _ = u.allow("report", t0.Add(time.Minute+time.Second))
	require.False(t, ok, "the minute starts again at the last line")
}
