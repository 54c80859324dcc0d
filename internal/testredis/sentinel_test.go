package testredis_test

import (
	"context"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testredis/sentinelproc"
)

// A Sentinel group on loopback: a FailoverClient writes to the primary, the
// write reaches the replica, a SIGKILLed primary is replaced by the replica
// within seconds, the client follows it with the data, and the old primary,
// restarted, comes back as a replica.
func TestSentinelFailover(t *testing.T) {
	s := testredis.StartSentinel(t, sentinelproc.Options{})
	c := ctx(t)
	addrs := append(s.SentinelAddrs(), s.NodeAddrs()...)
	if len(s.SentinelAddrs()) != 3 || len(s.NodeAddrs()) != 2 {
		t.Fatalf("sentinels %v, nodes %v: want 3 and 2", s.SentinelAddrs(), s.NodeAddrs())
	}
	for _, a := range addrs {
		if host, _, _ := net.SplitHostPort(a); host != "127.0.0.1" {
			t.Fatalf("%s does not listen on 127.0.0.1", a)
		}
	}
	old, err := s.Primary(c)
	if err != nil || old != s.NodeAddrs()[0] {
		t.Fatalf("primary %q (%v), want %s", old, err, s.NodeAddrs()[0])
	}
	rdb := s.NewClient(t, nil)
	if err := rdb.Set(c, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The write is on the replica once WAIT says so.
	if n, err := rdb.Do(c, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d, %v", n, err)
	}

	killed, at, err := s.KillPrimary(c)
	if err != nil || killed != old {
		t.Fatalf("KillPrimary: %s, %v; want %s", killed, err, old)
	}
	wctx, cancel := context.WithTimeout(c, 20*time.Second)
	defer cancel()
	primary, promoted, err := s.WaitFailover(wctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if primary != s.NodeAddrs()[1] {
		t.Fatalf("new primary %s, want the replica %s", primary, s.NodeAddrs()[1])
	}
	t.Logf("promotion %v after the kill", promoted.Sub(at).Round(time.Millisecond))
	// The client follows (its first commands may fail while it switches).
	var got string
	require.Eventually(t, func() bool {
		got, err = rdb.Get(c, "k").Result()
		return err == nil
	}, 5*time.Second, 50*time.Millisecond, "the client never reached the new primary")
	if got != "before" {
		t.Fatalf("after failover: GET k = %q, %v", got, err)
	}
	if err := rdb.Set(c, "k", "after", 0).Err(); err != nil {
		t.Fatalf("write after failover: %v", err)
	}

	// The old primary comes back as a replica of the new one.
	if err := s.Rejoin(c, old); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReplicas(wctx, 1); err != nil {
		t.Fatal(err)
	}
	oc := redis.NewClient(&redis.Options{Addr: old})
	defer oc.Close()
	role, err := oc.Do(c, "ROLE").Slice()
	if err != nil || role[0] != "slave" {
		t.Fatalf("old primary's ROLE %v, %v; want slave", role, err)
	}
}

// StartSentinel with an unknown binary fails with a clear error.
func TestSentinelStartMissingBinary(t *testing.T) {
	_, err := sentinelproc.Start(context.Background(), sentinelproc.Options{Bin: "no-such-redis-server"})
	if err == nil {
		t.Fatal("want an error")
	}
}

// StartSentinel whose context ends before the group is ready (a chaos run
// out of time) returns the error and stops what it started; it panicked
// on the nil group it was about to return.
func TestSentinelStartCancelled(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("needs redis-server")
	}
	c, cancel := context.WithCancel(context.Background())
	cancel()
	g, err := sentinelproc.Start(c, sentinelproc.Options{Dir: t.TempDir(), Lifetime: time.Minute})
	if err == nil || g != nil {
		t.Fatalf("Start with its context ended: %v, %v; want an error", g, err)
	}
}
