package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A transcode at low priority is preempted by an urgent thumbnail after
// its fourth segment: it saves its progress, the thumbnail runs, and the
// transcode resumes at segment 5.
func Example() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	q, err := queue.New(rdb, queue.Config{Name: "media"})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	tc := &Transcoder{SegmentTime: 5 * time.Millisecond, CheckpointEvery: time.Minute, Out: os.Stdout}
	// After segment 4 of the first run, a producer enqueues an urgent
	// thumbnail. The hook then waits for the preemption so that it always
	// lands at the same segment; real work just carries on until it comes.
	tc.AfterSegment = func(ctx context.Context, t *queue.TaskInfo, done int) {
		if done != 4 || t.Preemptions > 0 {
			return
		}
		if _, err := q.Enqueue(ctx, queue.NewTask(TypeThumbnail, []byte("movie.mp4")), queue.LevelNamed("high")); err != nil {
			panic(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			panic("not preempted")
		}
	}
	// One slot, so the thumbnail can only run by preempting the transcode;
	// StartAfterVictim starts it once the transcode has saved and returned.
	mux := newMux(tc)
	finished := make(chan struct{}) // closed when the transcode's handler succeeded
	mux.Use(func(next handlers.Handler) handlers.Handler {
		return handlers.HandlerFunc(func(ctx context.Context, t *queue.TaskInfo) error {
			err := next.ProcessTask(ctx, t)
			if err == nil && t.Type == TypeTranscode {
				close(finished)
			}
			return err
		})
	})
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 1, UrgentStart: runtime.StartAfterVictim})
	if err != nil {
		panic(err)
	}
	payload, _ := json.Marshal(TranscodeArgs{Video: "movie.mp4", Segments: 6})
	job, err := q.Enqueue(ctx, queue.NewTask(TypeTranscode, payload), queue.LevelNamed("low"))
	if err != nil {
		panic(err)
	}
	if err := rt.Start(ctx); err != nil {
		panic(err)
	}
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		panic("transcode not done")
	}
	if err := rt.Shutdown(ctx); err != nil { // waits for its ack
		panic(err)
	}
	if _, err := q.Inspect(ctx, job.ID); !errors.Is(err, queue.ErrTaskNotFound) {
		panic("the finished transcode was not acked")
	}
	// Output:
	// transcode movie.mp4: segment 1/6
	// transcode movie.mp4: segment 2/6
	// transcode movie.mp4: segment 3/6
	// transcode movie.mp4: segment 4/6
	// transcode movie.mp4: preempted after 4/6 segments, checkpoint saved
	// thumbnail movie.mp4: done
	// transcode movie.mp4: resumed at segment 5/6
	// transcode movie.mp4: segment 5/6
	// transcode movie.mp4: segment 6/6
	// transcode movie.mp4: done: 6 segments, preemptions: 1
}

// A transcode canceled after its second segment stops at once and saves
// nothing: the task ends canceled, without a checkpoint, and never runs
// again.
func Example_cancel() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	// Retention keeps the canceled task's record readable for an hour.
	q, err := queue.New(rdb, queue.Config{Name: "media", Retention: time.Hour})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	tc := &Transcoder{SegmentTime: 5 * time.Millisecond, CheckpointEvery: 0, Out: os.Stdout}
	// After segment 2, an operator cancels the transcode (overtake cancel
	// ID does the same). The hook then waits for the cancel to reach the
	// handler, so that it always lands at the same segment.
	tc.AfterSegment = func(ctx context.Context, t *queue.TaskInfo, done int) {
		if done != 2 {
			return
		}
		if err := q.Cancel(context.Background(), t.ID); err != nil {
			panic(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			panic("not canceled")
		}
	}
	mux := newMux(tc)
	returned := make(chan struct{}) // closed when the transcode's handler returned
	mux.Use(func(next handlers.Handler) handlers.Handler {
		return handlers.HandlerFunc(func(ctx context.Context, t *queue.TaskInfo) error {
			defer close(returned)
			return next.ProcessTask(ctx, t)
		})
	})
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 1})
	if err != nil {
		panic(err)
	}
	payload, _ := json.Marshal(TranscodeArgs{Video: "movie.mp4", Segments: 6})
	job, err := q.Enqueue(ctx, queue.NewTask(TypeTranscode, payload), queue.LevelNamed("low"))
	if err != nil {
		panic(err)
	}
	if err := rt.Start(ctx); err != nil {
		panic(err)
	}
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		panic("transcode did not return")
	}
	if err := rt.Shutdown(ctx); err != nil { // waits for the run's end to be recorded
		panic(err)
	}
	t, err := q.Inspect(ctx, job.ID)
	if err != nil {
		panic(err)
	}
	fmt.Printf("state: %s, checkpoint: %d bytes, canceled runs: %d\n", t.State, len(t.Checkpoint), rt.Stats().Canceled)
	// Output:
	// transcode movie.mp4: segment 1/6
	// transcode movie.mp4: segment 2/6
	// transcode movie.mp4: canceled after 2/6 segments, nothing saved
	// state: canceled, checkpoint: 0 bytes, canceled runs: 1
}
