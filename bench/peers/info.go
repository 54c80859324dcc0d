package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// admin is the benchmark's own connection to Redis, used only for
// measuring (FLUSHALL, CONFIG RESETSTAT, INFO), never by a system under
// test. It counts the commands it sends, so that a commandstats delta can
// leave them out exactly.
type admin struct {
	*redis.Client
	sent atomic.Int64
}

func newAdmin(addr string) *admin {
	a := &admin{Client: redis.NewClient(&redis.Options{Addr: addr})}
	a.AddHook(a)
	return a
}

// DialHook, ProcessHook and ProcessPipelineHook make admin a redis.Hook
// that counts every command it sends.
func (a *admin) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts one command.
func (a *admin) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a.sent.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts a pipeline's commands.
func (a *admin) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		a.sent.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// window is an interval of Redis statistics opened by resetStats.
type window struct {
	a    *admin
	sent int64 // a.sent before the CONFIG RESETSTAT
}

// resetStats runs CONFIG RESETSTAT (commandstats back to zero) and opens a
// window on the commands run from now on.
func (a *admin) resetStats(ctx context.Context) (window, error) {
	w := window{a: a, sent: a.sent.Load()}
	return w, a.ConfigResetStat(ctx).Err()
}

// calls is the sum of calls over INFO commandstats since the window opened,
// commands run inside Lua scripts included, the admin's own commands
// (CONFIG RESETSTAT, INFO) excluded. The INFO that reads the stats is not
// in its own output.
func (w window) calls(ctx context.Context) (int64, error) {
	own := w.a.sent.Load() - w.sent
	raw, err := w.a.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, n := range parseCommandStats(raw) {
		total += n
	}
	return total - own, nil
}

// parseCommandStats maps each command of an INFO commandstats reply
// ("cmdstat_evalsha:calls=10,usec=...") to its calls; subcommands keep
// their name ("config|resetstat").
func parseCommandStats(raw string) map[string]int64 {
	out := map[string]int64{}
	for _, line := range strings.Split(raw, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		cmd, isStat := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isStat {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					out[cmd] += n
				}
			}
		}
	}
	return out
}

// infoField reads field of an INFO reply ("used_memory:123"); ok is false
// when the field is missing.
func infoField(raw, field string) (string, bool) {
	for _, line := range strings.Split(raw, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, true
		}
	}
	return "", false
}

// taskMemory is INFO memory used_memory less mem_clients_normal, in bytes:
// what the data takes, without the buffers of the client connections (the
// 16 connections a fill opens would otherwise add several bytes a task).
func (a *admin) taskMemory(ctx context.Context) (float64, error) {
	raw, err := a.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	var v [2]float64
	for i, f := range []string{"used_memory", "mem_clients_normal"} {
		s, _ := infoField(raw, f)
		if v[i], err = strconv.ParseFloat(s, 64); err != nil {
			return 0, fmt.Errorf("INFO memory %s: %w", f, err)
		}
	}
	return v[0] - v[1], nil
}

// cpuSeconds is redis-server's used_cpu_sys + used_cpu_user, read from one
// INFO cpu.
func (a *admin) cpuSeconds(ctx context.Context) (float64, error) {
	raw, err := a.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	for _, f := range []string{"used_cpu_sys", "used_cpu_user"} {
		v, _ := infoField(raw, f)
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, err
		}
		total += x
	}
	return total, nil
}

// version is the server's redis_version.
func (a *admin) version(ctx context.Context) string {
	raw, _ := a.Info(ctx, "server").Result()
	if v, ok := infoField(raw, "redis_version"); ok {
		return v
	}
	return "?"
}
