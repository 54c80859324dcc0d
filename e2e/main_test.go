package e2e_test

import (
	"testing"

	"github.com/overtake/overtake/internal/testredis"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testredis.Main(m,
		// ants starts a package-level default pool at init; it is not ours.
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"))
}
