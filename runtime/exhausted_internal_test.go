package runtime

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/store"
)

// The dead letter's reason of a task whose retries ran out counts its
// failed runs against its budget as the overtake command's inspect does:
// the first run and the retries, "retry" when there is one, never
// "1 attempts".
func TestExhaustedReasonCountsRunsAndRetries(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		attempt, maxRetries int
		want                string
	}{
		{0, 0, "retries exhausted: 1 failed of at most 1 (the first run and 0 retries): boom"},
		{1, 1, "retries exhausted: 2 failed of at most 2 (the first run and 1 retry): boom"},
		{2, 2, "retries exhausted: 3 failed of at most 3 (the first run and 2 retries): boom"},
	} {
		tk := &store.Task{}
		tk.Attempt, tk.MaxRetries = c.attempt, c.maxRetries
		require.Equal(t, c.want, exhaustedReason(tk, boom))
	}
}
