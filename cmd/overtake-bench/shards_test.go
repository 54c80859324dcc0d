package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/redisproc"
)

// TestShardsSection runs the shard section small on a Redis Cluster it
// starts and checks that the table and the JSON hold every master's row
// of every K, and of 3 separate queues, with figures that can only come
// from a real run.
func TestShardsSection(t *testing.T) {
	needCluster(t)
	o := options{shards: "1,3,3q", shardTasks: 2000, concurrency: 16, batch: 500, redisServer: "redis-server", shardPlacement: placeBalanced,
		runLimit: time.Minute, timeout: 2 * time.Minute, shardsJSON: filepath.Join(t.TempDir(), "shards.json")}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, shardsSection(ctx, o, &out))
	table := out.String()
	t.Log("\n" + table)

	raw, err := os.ReadFile(o.shardsJSON)
	require.NoError(t, err)
	var res shardResult
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Len(t, res.Masters, 3)
	require.Len(t, res.Runs, 3)
	assert.Equal(t, "started", res.Source)

	one := res.Runs[0]
	require.Equal(t, 1, one.K)
	require.Empty(t, one.Err)
	require.Empty(t, one.Unsupported)
	assert.Equal(t, 1, sum(one.Tags), "K=1 keeps every key of the queue under one hash tag")
	assert.Equal(t, one.Planned, one.Tags, "the tag lands where CRC16 put it")
	for p := range phases {
		ph := one.Phases[p]
		require.Len(t, ph.CPU, 3, phaseNames[p])
		require.Len(t, ph.Cmds, 3, phaseNames[p])
		assert.Positive(t, ph.Elapsed, phaseNames[p])
		m := 0
		for i, n := range one.Tags {
			if n > 0 {
				m = i
			}
		}
		assert.Positive(t, one.cpuPerTask(p, m), "%s: the queue's master spent CPU", phaseNames[p])
		assert.Positive(t, one.cmdsPerTask(p, m), "%s: the queue's master ran commands", phaseNames[p])
	}
	assert.Equal(t, 2*o.shardTasks, one.Phases[phaseDrain].Tasks)
	assert.Positive(t, one.Phases[phaseDrain].Calls)

	for m := range 3 {
		assert.Regexp(t, regexp.MustCompile(`\| 13 \| shards K=1, master `+strconv.Itoa(m+1)+` 127\.0\.0\.1:\d+ \(slots [-0-9,]+; [01] of the queue's hash tags\): Redis CPU per 10k tasks, single Enqueue \+ drain \| [0-9.]+ \| ms/10k tasks \|`), table)
	}
	ceiling := regexp.MustCompile(`\| shards K=1: projected ceiling of one queue[^|]*\| ([0-9.]+) \| tasks/s \|`).FindStringSubmatch(table)
	require.Len(t, ceiling, 2, "K=1's ceiling row")
	v, err := strconv.ParseFloat(ceiling[1], 64)
	require.NoError(t, err)
	assert.Greater(t, v, 1000.0, "one Redis core drains more than 1000 no-op tasks a second")
	assert.Contains(t, table, "so the measured throughput cannot grow with K")

	three := res.Runs[1]
	require.Equal(t, 3, three.K)
	require.Empty(t, three.Err)
	require.Empty(t, three.Unsupported)
	assert.Equal(t, []int{1, 1, 1}, three.Tags, "a balanced K=3 puts one hash tag on each master")
	assert.Equal(t, three.Planned, three.Tags, "the tags land where CRC16 put them")
	for p := range phases {
		var cpu time.Duration
		var cmds int64
		for m := range 3 {
			if three.Tags[m] > 0 {
				cpu += three.Phases[p].CPU[m]
				cmds += three.Phases[p].Cmds[m]
			}
		}
		assert.Positive(t, cpu, "%s: the shards' masters spent CPU", phaseNames[p])
		assert.Positive(t, cmds, "%s: the shards' masters ran commands", phaseNames[p])
	}
	assert.Regexp(t, `\| shards K=3: projected ceiling of one queue[^|]*\| [0-9.]+ \| tasks/s \|`, table)
	assert.Regexp(t, `\| shards K=3 / K=1: the busiest master's Redis CPU per task, single Enqueue \+ drain \| [0-9.]+ \| fraction \| <= 0.4 \| (pass|FAIL): `, table)
	assert.Regexp(t, `\| shards K=3 / K=1: [^|]*\|[^|]*\|[^|]*\|[^|]*\| (pass|FAIL): [^|]*by phase, the busiest master's of each over K=1's: single Enqueue [0-9.]+, drain [0-9.]+; this machine \(the calibration row\): the same call [0-9.]+× dearer with every master busy, and alone it ranged max/min [0-9.]+ \|`, table)

	require.Len(t, res.Calib, 1, "one calibration a round")
	for _, c := range res.Calib {
		require.Len(t, c.Alone, 3)
		require.Len(t, c.Together, 3)
		for m := range 3 {
			assert.Positive(t, c.Alone[m], "master %d spent CPU on the calibration alone", m+1)
			assert.Positive(t, c.Together[m], "master %d spent CPU on the calibration with the others", m+1)
		}
		assert.Positive(t, c.factor())
	}
	assert.Regexp(t, `\| 13 \| this machine: a master's Redis CPU per call with all 3 masters busy at once over alone[^|]*\| [0-9.]+ \| × \| — \| info: the call alone ranged [0-9.]+–[0-9.]+ µs \(max/min [0-9.]+\) over the masters and rounds; 3000 calls a master`, table)

	split := res.Runs[2]
	require.Equal(t, -3, split.K)
	require.Empty(t, split.Err)
	assert.Equal(t, []int{1, 1, 1}, split.Tags, "3 queues of one shard, one on each master")
	for p := range phases {
		for m := range 3 {
			assert.Positive(t, split.Phases[p].CPU[m], "%s: master %d served its queue", phaseNames[p], m+1)
		}
	}
	assert.Equal(t, 2*o.shardTasks, split.Phases[phaseDrain].Tasks)
	assert.Positive(t, split.Phases[phaseDrain].Calls, "the runtimes' calls are counted")
	assert.Regexp(t, `\| 3 queues of one shard, one per master, no common order / K=1: [^|]*\| [0-9.]+ \| fraction \| — \|`, table)
}

// TestParseShards reads counts and split runs.
func TestParseShards(t *testing.T) {
	ks, err := parseShards("1,3,3q,6,3")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 3, -3, 6}, ks)
	for _, bad := range []string{"0", "1q", "q", "x", ""} {
		_, err := parseShards(bad)
		assert.Error(t, err, bad)
	}
}

// TestShardsSectionGivenCluster runs the section on a cluster named by
// one seed address: it finds the three masters and leaves no key behind.
func TestShardsSectionGivenCluster(t *testing.T) {
	needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := redisproc.StartCluster(ctx, redisproc.ClusterOptions{Args: []string{"--cluster-node-timeout", "5000"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	o := options{shards: "1", shardTasks: 300, concurrency: 8, batch: 100, runLimit: time.Minute, shardPlacement: placeRandom,
		cluster: cl.Addrs()[1], shardsJSON: filepath.Join(t.TempDir(), "shards.json")}
	var out bytes.Buffer
	require.NoError(t, shardsSection(ctx, o, &out))
	raw, err := os.ReadFile(o.shardsJSON)
	require.NoError(t, err)
	var res shardResult
	require.NoError(t, json.Unmarshal(raw, &res))
	assert.Equal(t, "given", res.Source)
	assert.ElementsMatch(t, cl.Addrs(), res.Masters)
	require.Len(t, res.Runs, 1)
	assert.Empty(t, res.Runs[0].Err)
	for _, a := range cl.Addrs() {
		n := redis.NewClient(&redis.Options{Addr: a})
		keys, err := n.DBSize(ctx).Result()
		_ = n.Close()
		require.NoError(t, err)
		assert.Zero(t, keys, "%s keeps no key of the bench", a)
	}
}

// needCluster skips a test in -short mode and where redis-server or
// redis-cli is missing.
func needCluster(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real Redis Cluster")
	}
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs a real Redis Cluster: %v", err)
		}
	}
}

func TestCRC16IsRedisKeySlot(t *testing.T) {
	assert.Equal(t, uint16(0x31c3), crc16([]byte("123456789")), "CRC-16/XMODEM check value")
	assert.Equal(t, 12182, int(crc16([]byte("foo"))%16384), "CLUSTER KEYSLOT foo")
}
