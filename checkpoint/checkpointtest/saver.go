package checkpointtest

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/overtake/overtake/internal/ckpt"
	"github.com/overtake/overtake/queue"
)

// Saver is an in-memory checkpoint store. Like the queue, it accepts a save
// only under the task's current lease token (queue.ErrLeaseLost otherwise),
// numbers checkpoints from 1 and enforces MaxBytes. The zero value is ready
// to use; it is safe for concurrent use.
type Saver struct {
	// MaxBytes, if positive, rejects larger checkpoints with
	// queue.ErrCheckpointTooLarge.
	MaxBytes int
	// MaxResultBytes rejects larger results (handlers.SetResult) with
	// queue.ErrResultTooLarge. As queue.Config.MaxResultBytes, zero means
	// the queue's default (1 MiB), so a handler tested here meets the
	// limit it meets in production; a negative value means no limit.
	MaxResultBytes int

	mu     sync.Mutex
	tasks  map[string]*record
	leases map[*queue.TaskInfo]string // the token of each task Lease returned
	calls  int
	err    error
}

type record struct {
	token  string
	data   []byte
	seq    int64
	result []byte
}

// Lease makes token the valid lease of the task with t.ID, as the queue does
// when it leases the task, and returns a copy of t with the stored
// checkpoint filled in: what a handler would receive. Context given the
// copy saves under token, so a copy from an earlier Lease is fenced off.
func (s *Saver) Lease(t *queue.TaskInfo, token string) *queue.TaskInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tasks == nil {
		s.tasks = make(map[string]*record)
		s.leases = make(map[*queue.TaskInfo]string)
	}
	r, ok := s.tasks[t.ID]
	if !ok {
		r = &record{}
		s.tasks[t.ID] = r
	}
	r.token = token
	leased := *t
	leased.Checkpoint = bytes.Clone(r.data)
	leased.CheckpointSeq = r.seq
	s.leases[&leased] = token
	return &leased
}

// Fail makes every later call return err, until Fail(nil).
func (s *Saver) Fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// SaveCheckpoint stores data as the checkpoint of the task, as the queue
// does for a handler's checkpoint.Save.
func (s *Saver) SaveCheckpoint(ctx context.Context, taskID, token string, data []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if s.err != nil {
		return 0, s.err
	}
	r, ok := s.tasks[taskID]
	if !ok || r.token != token {
		return 0, queue.ErrLeaseLost // the caller names the task
	}
	if s.MaxBytes > 0 && len(data) > s.MaxBytes {
		return 0, fmt.Errorf("%d bytes: %w", len(data), queue.ErrCheckpointTooLarge)
	}
	r.data = bytes.Clone(data)
	r.seq++
	return r.seq, nil
}

// Checkpoint returns the stored checkpoint of a task and its sequence number.
func (s *Saver) Checkpoint(taskID string) ([]byte, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.tasks[taskID]
	if !ok {
		return nil, 0
	}
	return bytes.Clone(r.data), r.seq
}

// SaveResult stores data as the result of task t, as the queue does for a
// handler's handlers.SetResult: only under t's current lease token
// (queue.ErrLeaseLost otherwise), the latest write winning.
func (s *Saver) SaveResult(ctx context.Context, t *queue.TaskInfo, token string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.err != nil {
		return s.err
	}
	r, ok := s.tasks[t.ID]
	if !ok || r.token != token {
		return queue.ErrLeaseLost
	}
	limit := s.MaxResultBytes
	if limit == 0 {
		limit = queue.Config{}.WithDefaults().MaxResultBytes
	}
	if limit >= 0 && len(data) > limit {
		return fmt.Errorf("%d bytes, limit %d: %w", len(data), limit, queue.ErrResultTooLarge)
	}
	r.result = bytes.Clone(data)
	return nil
}

// Result returns the stored result of a task, nil if none.
func (s *Saver) Result(taskID string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.tasks[taskID]; ok {
		return bytes.Clone(r.result)
	}
	return nil
}

// Calls returns how many times SaveCheckpoint and SaveResult were called.
func (s *Saver) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Context returns ctx carrying the checkpoint of t, a task leased from s
// (Lease), as the runtime gives it to a handler: checkpoint.Load, Save and
// NewCursor, and handlers.SetResult, in code run with it read and write s
// under the lease token of t: the one Lease returned t under, else the
// task's current one (saves fail with queue.ErrLeaseLost if t.ID was never
// leased).
func (s *Saver) Context(ctx context.Context, t *queue.TaskInfo) context.Context {
	return ckpt.NewContext(ctx, ckpt.New(s, t, s.token(t), ckpt.WithResults(s, 0)))
}

// token returns the lease token of t.
func (s *Saver) token(t *queue.TaskInfo) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok, ok := s.leases[t]; ok {
		return tok
	}
	if r, ok := s.tasks[t.ID]; ok {
		return r.token
	}
	return ""
}
