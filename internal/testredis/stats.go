package testredis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// CommandCalls is the number of commands the server ran since its last
// CONFIG RESETSTAT, summed over INFO commandstats: commands run inside Lua
// scripts are counted, and so is each EVALSHA itself, and this call's INFO
// is not (it is counted only after it returns).
func CommandCalls(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	return commandStats(ctx, rdb, "calls", nil)
}

// ScriptCalls is the number of EVALSHA and EVAL calls since the last
// CONFIG RESETSTAT (INFO commandstats).
func ScriptCalls(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	return commandStats(ctx, rdb, "calls", isScript)
}

// ScriptMicros is the time Redis spent in EVALSHA and EVAL since the last
// CONFIG RESETSTAT, in µs (INFO commandstats usec): the commands the
// scripts call included, the network and the event loop not.
func ScriptMicros(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	return commandStats(ctx, rdb, "usec", isScript)
}

func isScript(cmd string) bool { return cmd == "evalsha" || cmd == "eval" }

// commandStats sums one field of INFO commandstats (calls, usec) over the
// commands keep accepts (nil: all).
func commandStats(ctx context.Context, rdb redis.UniversalClient, field string, keep func(cmd string) bool) (int64, error) {
	fields, err := infoFields(ctx, rdb, "commandstats")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, nv := range fields {
		cmd, isCmd := strings.CutPrefix(nv.name, "cmdstat_")
		if !isCmd || (keep != nil && !keep(cmd)) {
			continue
		}
		for _, f := range strings.Split(nv.value, ",") {
			if v, ok := strings.CutPrefix(f, field+"="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("commandstats %s:%s: %w", nv.name, nv.value, err)
				}
				total += n
			}
		}
	}
	return total, nil
}

// UsedMemory is INFO memory's used_memory, in bytes.
func UsedMemory(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	fields, err := infoFields(ctx, rdb, "memory")
	if err != nil {
		return 0, err
	}
	for _, nv := range fields {
		if nv.name == "used_memory" {
			return strconv.ParseInt(nv.value, 10, 64)
		}
	}
	return 0, fmt.Errorf("no used_memory in INFO")
}

// ServerCPU is redis-server's user plus system CPU time so far (INFO cpu
// used_cpu_user + used_cpu_sys): the network and the event loop included,
// which ScriptMicros leaves out.
func ServerCPU(ctx context.Context, rdb redis.UniversalClient) (time.Duration, error) {
	fields, err := infoFields(ctx, rdb, "cpu")
	if err != nil {
		return 0, err
	}
	var total float64
	for _, nv := range fields {
		if nv.name != "used_cpu_user" && nv.name != "used_cpu_sys" {
			continue
		}
		f, err := strconv.ParseFloat(nv.value, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu %s:%s: %w", nv.name, nv.value, err)
		}
		total += f
	}
	return time.Duration(total * float64(time.Second)), nil
}

// infoField is one "name:value" line of INFO.
type infoField struct{ name, value string }

// infoFields reads one section of INFO as its "name:value" lines, in
// order (a reply that joins several servers' INFO repeats names).
func infoFields(ctx context.Context, rdb redis.UniversalClient, section string) ([]infoField, error) {
	info, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	var fields []infoField
	for _, line := range strings.Split(info, "\n") {
		if name, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields = append(fields, infoField{name, v})
		}
	}
	return fields, nil
}
