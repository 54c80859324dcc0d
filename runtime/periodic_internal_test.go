package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/queue"
)

// Every runtime agrees on a schedule's ticks: intervals are multiples of
// their duration, cron expressions are read in UTC unless CRON_TZ says
// otherwise.
func TestScheduleTicks(t *testing.T) {
	task := queue.NewTask("t", nil)
	ss, err := parseSchedules([]Periodic{
		{Name: "every", Spec: "@every 5s", Task: task},
		{Name: "cron", Spec: "0 9 * * *", Task: task},
		{Name: "paris", Spec: "CRON_TZ=Europe/Paris 0 9 * * *", Task: task},
		{Name: "secs", Spec: "*/10 * * * * *", Task: task},
	})
	require.NoError(t, err)
	at := time.Date(2026, 11, 28, 12, 0, 3, 0, time.UTC)
	require.Equal(t, at.Add(2*time.Second), ss[0].next(at))
	require.Equal(t, at.Add(7*time.Second), ss[0].next(at.Add(2*time.Second)), "the tick after a tick")
	require.Equal(t, time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), ss[1].next(at).UTC())
	require.Equal(t, time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), ss[2].next(at).UTC())
	require.Equal(t, at.Add(7*time.Second), ss[3].next(at))
}
