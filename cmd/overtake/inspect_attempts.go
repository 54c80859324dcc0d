package main

import "github.com/overtake/overtake/internal/outcome"

// attemptsText describes a task's failed attempts against its budget, in
// the words the runtime and the console use too (outcome.Attempts).
var attemptsText = outcome.Attempts
