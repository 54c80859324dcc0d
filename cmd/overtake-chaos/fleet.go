package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// fleet is the worker processes: this binary re-executed as workers.
type fleet struct {
	bin, addr, logDir string
	tag               string // the workers' ID prefix; "" means "w"

	mu       sync.Mutex
	procs    map[int]*exec.Cmd
	gen      int
	restarts sync.WaitGroup // restarts in flight
}

func (f *fleet) start(i int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.procs == nil {
		f.procs = map[int]*exec.Cmd{}
	}
	f.gen++
	tag := f.tag
	if tag == "" {
		tag = "w"
	}
	id := fmt.Sprintf("%s%d.%d", tag, i, f.gen)
	cmd := exec.Command(f.bin, workerArgs(f.addr, id, filepath.Join(f.logDir, id+".log"))...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	f.procs[i] = cmd
	go func() { _ = cmd.Wait() }() // reaped whatever ends it
	return nil
}

// signal sends sig to worker i.
func (f *fleet) signal(i int, sig syscall.Signal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.procs[i]; p != nil {
		_ = p.Process.Signal(sig)
	}
}

// killRandom SIGKILLs a random worker other than skip and restarts it a
// second later (in the background); it returns the worker's number.
func (f *fleet) killRandom(skip int) int {
	f.mu.Lock()
	n := len(f.procs)
	f.mu.Unlock()
	i := rand.IntN(n - 1) // any worker but skip, evenly
	if i >= skip {
		i++
	}
	f.signal(i, syscall.SIGKILL)
	f.restarts.Add(1)
	go func() {
		defer f.restarts.Done()
		time.Sleep(time.Second) // a crashed worker's restart delay
		_ = f.start(i)
	}()
	return i
}

// ensureAll restarts any worker that is not running (a kill in flight when
// the faults stopped).
func (f *fleet) ensureAll() error {
	f.restarts.Wait()
	f.mu.Lock()
	var dead []int
	for i, p := range f.procs {
		if p.Process.Signal(syscall.Signal(0)) != nil {
			dead = append(dead, i)
		}
	}
	f.mu.Unlock()
	for _, i := range dead {
		if err := f.start(i); err != nil {
			return err
		}
	}
	return nil
}

// stopAll stops every worker gracefully (SIGTERM), then kills stragglers.
func (f *fleet) stopAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.procs {
		_ = p.Process.Signal(syscall.SIGCONT)
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range f.procs {
		for p.Process.Signal(syscall.Signal(0)) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // waiting for a process to exit
		}
		_ = p.Process.Kill()
	}
}
