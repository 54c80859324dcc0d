package main

import (
	"github.com/overtake/overtake/handlers"

	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/queue"
)

// Task types of this example.
const (
	TypeTranscode = "transcode" // long, low priority, resumable
	TypeThumbnail = "thumbnail" // short, urgent
)

// TranscodeArgs is the payload of a "transcode" task.
type TranscodeArgs struct {
	Video    string `json:"video"`
	Segments int    `json:"segments"`
}

// Progress is the checkpoint of a transcode: segments finished so far.
type Progress struct {
	Segments int `json:"segments"`
}

// Transcoder transcodes videos segment by segment. It saves its progress
// periodically and, when preempted or shut down, right before it returns,
// so a later run resumes at the first unfinished segment.
type Transcoder struct {
	// SegmentTime is the (simulated) work of one segment.
	SegmentTime time.Duration
	// CheckpointEvery is the least time between two periodic checkpoints.
	CheckpointEvery time.Duration
	// Out receives one line per event.
	Out io.Writer
	// AfterSegment, if set, is called after each finished segment with the
	// number finished so far (the example uses it to time a preemption).
	AfterSegment func(ctx context.Context, t *queue.TaskInfo, done int)
}

// Transcode is the handler of "transcode" tasks.
func (tc *Transcoder) Transcode(ctx context.Context, t *queue.TaskInfo, a TranscodeArgs) error {
	cur, err := checkpoint.NewCursor[Progress](ctx, tc.CheckpointEvery)
	if err != nil {
		return err // a malformed checkpoint: retried, then dead-lettered
	}
	if cur.Resumed() {
		tc.printf("%s %s: resumed at segment %d/%d", TypeTranscode, a.Video, cur.Value().Segments+1, a.Segments)
	}
	for done := cur.Value().Segments; done < a.Segments; done++ {
		if err := tc.encodeSegment(ctx); err != nil {
			// Stopped mid-segment: that segment is redone on resume.
			return tc.stop(ctx, a, cur)
		}
		if err := cur.Set(ctx, Progress{Segments: done + 1}); err != nil {
			return err // the lease was lost: another worker owns the task now
		}
		tc.printf("%s %s: segment %d/%d", TypeTranscode, a.Video, done+1, a.Segments)
		if tc.AfterSegment != nil {
			tc.AfterSegment(ctx, t, done+1)
		}
	}
	tc.printf("%s %s: done: %d segments, preemptions: %d", TypeTranscode, a.Video, a.Segments, t.Preemptions)
	return nil
}

// encodeSegment simulates the work of one segment, abandoned when ctx ends.
func (tc *Transcoder) encodeSegment(ctx context.Context) error {
	timer := time.NewTimer(tc.SegmentTime)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop ends a run whose context is done. Canceled (queue.Client.Cancel),
// it saves nothing, as the task never resumes, and returns the cause: the
// task ends canceled. Preempted or shut down, it saves the progress
// reached (Flush works after cancellation, within the runtime's grace
// period) and returns the cause: the runtime requeues the task at the
// head of its level without counting a failed attempt.
func (tc *Transcoder) stop(ctx context.Context, a TranscodeArgs, cur *checkpoint.Cursor[Progress]) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, handlers.ErrCanceled) {
		tc.printf("%s %s: canceled after %d/%d segments, nothing saved", TypeTranscode, a.Video, cur.Value().Segments, a.Segments)
		return cause
	}
	if err := cur.Flush(ctx); err != nil {
		return err
	}
	switch {
	case errors.Is(cause, handlers.ErrPreempted):
		tc.printf("%s %s: preempted after %d/%d segments, checkpoint saved", TypeTranscode, a.Video, cur.Value().Segments, a.Segments)
	case errors.Is(cause, handlers.ErrShutdown):
		tc.printf("%s %s: worker stopping after %d/%d segments, checkpoint saved", TypeTranscode, a.Video, cur.Value().Segments, a.Segments)
	}
	return cause
}

// Thumbnail is the handler of "thumbnail" tasks; the payload is the video.
func (tc *Transcoder) Thumbnail(_ context.Context, t *queue.TaskInfo) error {
	tc.printf("%s %s: done", TypeThumbnail, t.Payload)
	return nil
}

func (tc *Transcoder) printf(format string, a ...any) {
	fmt.Fprintf(tc.Out, format+"\n", a...)
}
