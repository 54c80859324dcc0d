package outcome

import "fmt"

// Attempts says a task's failed runs against its retry budget, in the
// words the runtime's dead-letter reason, the CLI's inspect and the
// console's task page share: MaxRetries retries follow the first run, so
// maxRetries+1 runs may fail before the task is dead-lettered
// ("1 failed of at most 3 (the first run and 2 retries)").
func Attempts(failed, maxRetries int) string {
	retries := "retries"
	if maxRetries == 1 {
		retries = "retry"
	}
	return fmt.Sprintf("%d failed of at most %d (the first run and %d %s)", failed, maxRetries+1, maxRetries, retries)
}
