// Package checkpointtest provides an in-memory checkpoint store with the
// fencing of the real queue, for tests of handlers that use package
// checkpoint: lease a task from a Saver, run the handler with the Saver's
// Context, and read what it saved with Checkpoint (and the result it
// stored with handlers.SetResult, with Result).
package checkpointtest
