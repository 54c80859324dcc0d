package bench_test

import (
	"testing"

	"github.com/overtake/overtake/internal/testredis"
)

// testredis.Main checks for leaked goroutines (ants' own pool aside).
func TestMain(m *testing.M) { testredis.Main(m) }
