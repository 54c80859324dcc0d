package main

import (
	"errors"
	"strings"

	"github.com/overtake/overtake/queue"
)

// message is the text the CLI prints for err, a command's error: without
// the library's "overtake: " prefix, with the CLI's own knob where the
// library's message names a Go one, and with passwords masked.
func message(err error) string {
	s := strings.TrimPrefix(err.Error(), "overtake: ")
	switch {
	case errors.Is(err, queue.ErrShapeMismatch):
		s += "; the CLI reads the shape from Redis: drop --levels and --classes (deprecated) to use the stored one"
	case errors.Is(err, queue.ErrPayloadTooLarge):
		s += "; the CLI uses the default MaxPayloadBytes: send a smaller payload, or enqueue it from a producer " +
			"whose queue.Config sets a larger MaxPayloadBytes"
	}
	return mask(s)
}
