package ckpt

import "time"

// DefaultSaveTimeout bounds one Save unless WithSaveTimeout sets another.
const DefaultSaveTimeout = 5 * time.Second

// Option configures a Handle.
type Option func(*options)

type options struct {
	maxBytes    int
	saveTimeout time.Duration
	codec       Codec
	results     ResultSaver
	maxResult   int
	observer    Observer
}

// Observer is told of a Handle's successful saves; the runtime's run is
// one, for trace events and metrics. Its methods run on the saving
// goroutine and must not call Save or SaveResult.
type Observer interface {
	// CheckpointSaved follows every successful Save, with the size in
	// bytes and the new sequence number.
	CheckpointSaved(size int, seq int64)
	// ResultStored follows every successful SaveResult, with the
	// result's size in bytes.
	ResultStored(size int)
}

// apply sets o to the defaults, then applies opts.
func (o *options) apply(opts []Option) {
	*o = options{saveTimeout: DefaultSaveTimeout, codec: JSON}
	for _, opt := range opts {
		opt(o)
	}
}

// WithMaxBytes makes Save reject checkpoints larger than n bytes before any
// round trip, with an error matching queue.ErrCheckpointTooLarge that names
// both sizes. Use the queue's own limit. Zero or negative means no limit on
// this side (the queue still enforces its own).
func WithMaxBytes(n int) Option {
	return func(o *options) { o.maxBytes = n }
}

// WithObserver sets the Observer of the Handle's successful saves and
// results; nil, the default, tells no one. The runtime passes its run, a
// pointer, which costs no allocation (a closure per hook would cost one
// each).
func WithObserver(obs Observer) Option {
	return func(o *options) { o.observer = obs }
}

// WithSaveTimeout bounds each Save, which otherwise ignores the cancellation
// of its context (see Handle.Save). Defaults to DefaultSaveTimeout (5 s); a
// non-positive d restores the default.
func WithSaveTimeout(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			d = DefaultSaveTimeout
		}
		o.saveTimeout = d
	}
}

// WithCodec sets the codec Load, Save and Cursor encode values with.
// Defaults to JSON; nil restores the default.
func WithCodec(c Codec) Option {
	return func(o *options) {
		if c == nil {
			c = JSON
		}
		o.codec = c
	}
}

// WithResults lets the Handle store the task's result (SaveResult) with rs,
// refusing results larger than maxBytes before any round trip (zero or
// negative: no limit on this side; the queue enforces its own).
func WithResults(rs ResultSaver, maxBytes int) Option {
	return func(o *options) { o.results, o.maxResult = rs, maxBytes }
}
