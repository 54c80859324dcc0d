package testredis_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/testredis"
)

func TestMain(m *testing.M) { testredis.Main(m) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestForEachPing(t *testing.T) {
	var names []string
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		names = append(names, b.Name)
		c := ctx(t)
		if err := b.Client.Ping(c).Err(); err != nil {
			t.Fatalf("ping %s: %v", b.Name, err)
		}
		key := "{" + b.Prefix + ":q}:k"
		if err := b.Client.Set(c, key, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := b.NewClient(t).Get(c, key).Val(); got != "v" {
			t.Fatalf("second client read %q, want v", got)
		}
		if b.IsMini() != (b.Name == testredis.NameMini) {
			t.Fatalf("IsMini mismatch for %s", b.Name)
		}
	})
	want := 1
	if os.Getenv(testredis.EnvRedisAddr) != "" || (!testing.Short() && onPath("redis-server")) {
		want = 2
	}
	if len(names) != want || names[0] != testredis.NameMini {
		t.Fatalf("backends %v, want %d starting with miniredis", names, want)
	}
}

func TestPrefixUniqueAndCleaned(t *testing.T) {
	var leftover string
	var realClient redis.UniversalClient
	t.Run("sub/with spaces{}", func(t *testing.T) {
		a, b := testredis.Backends(t), testredis.Backends(t)
		if a[0].Prefix == b[0].Prefix {
			t.Fatalf("prefix not unique: %q", a[0].Prefix)
		}
		if strings.ContainsAny(a[0].Prefix, "{}: /*?[]") {
			t.Fatalf("prefix %q has key-unsafe characters", a[0].Prefix)
		}
		if len(a) == 2 {
			leftover = "{" + a[1].Prefix + "}:x"
			a[1].Client.Set(ctx(t), leftover, 1, 0)
		}
	})
	if leftover == "" {
		t.Skip("no real backend")
	}
	for _, b := range testredis.Backends(t) {
		if !b.IsMini() {
			realClient = b.Client
		}
	}
	if n := realClient.Exists(ctx(t), leftover).Val(); n != 0 {
		t.Fatalf("key %s of a finished test still exists", leftover)
	}
}

func TestNoRedisInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(testredis.EnvRedisAddr, "")
	if bs := testredis.Backends(t); len(bs) != 1 || !bs[0].IsMini() {
		t.Fatalf("without redis-server got %d backends", len(bs))
	}
	for name, start := range map[string]func(t *testing.T){
		"server":  func(t *testing.T) { testredis.StartServer(t, testredis.ServerOptions{}) },
		"cluster": func(t *testing.T) { testredis.StartCluster(t) },
	} {
		var skipped bool
		t.Run(name, func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			start(t)
		})
		if !skipped {
			t.Fatalf("%s: not skipped without redis-server", name)
		}
	}
}

func TestServerRestartKeepsData(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{Persistent: true})
	cl := srv.NewClient(t)
	c := ctx(t)
	addr := srv.Addr()
	for i, halt := range []func() error{srv.Kill, srv.Stop} {
		key := fmt.Sprintf("k%d", i)
		if err := cl.Set(c, key, "kept", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := halt(); err != nil {
			t.Fatal(err)
		}
		if srv.Running() {
			t.Fatal("still running after halt")
		}
		short, cancel := context.WithTimeout(c, 300*time.Millisecond)
		err := cl.Ping(short).Err()
		cancel()
		if err == nil {
			t.Fatal("ping succeeded during outage")
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		if srv.Addr() != addr {
			t.Fatalf("address changed: %s -> %s", addr, srv.Addr())
		}
		if got, err := cl.Get(c, key).Result(); err != nil || got != "kept" {
			t.Fatalf("after restart %s = %q, %v; want kept", key, got, err)
		}
	}
}

func TestServerNotPersistentLosesData(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	cl := srv.NewClient(t)
	c := ctx(t)
	cl.Set(c, "k", "v", 0)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if n := cl.Exists(c, "k").Val(); n != 0 {
		t.Fatal("non-persistent server kept data across restart")
	}
}

func TestCluster(t *testing.T) {
	cl := testredis.StartCluster(t)
	if len(cl.Addrs()) != 3 {
		t.Fatalf("addrs %v", cl.Addrs())
	}
	c := ctx(t)
	rc := cl.Client()
	for i := range 50 {
		if err := rc.Set(c, fmt.Sprintf("{q%d}:k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	other := cl.NewClient(t)
	for i := range 50 {
		if got, _ := other.Get(c, fmt.Sprintf("{q%d}:k", i)).Int(); got != i {
			t.Fatalf("key %d read %d", i, got)
		}
	}
	var used atomic.Int32 // ForEachMaster runs the callbacks concurrently
	err := rc.(*redis.ClusterClient).ForEachMaster(c, func(c context.Context, n *redis.Client) error {
		if n.DBSize(c).Val() > 0 {
			used.Add(1)
		}
		return nil
	})
	if err != nil || used.Load() != 3 {
		t.Fatalf("keys spread over %d of 3 masters (err %v)", used.Load(), err)
	}
	// A multi-key script on one hash tag runs unchanged on the cluster.
	n, err := rc.Eval(c, `redis.call('SET', KEYS[1], 1); return redis.call('INCR', KEYS[2])`,
		[]string{"{q}:a", "{q}:b"}).Int()
	if err != nil || n != 1 {
		t.Fatalf("eval = %d, %v", n, err)
	}
}

func onPath(name string) bool { _, err := exec.LookPath(name); return err == nil }
