package console

import "fmt"

// attemptsText describes a task's failed runs against its budget in the
// words of the overtake command's inspect: MaxRetries retries after the
// first run, so maxRetries+1 runs may fail before the task is
// dead-lettered ("1 failed of at most 3 (the first run and 2 retries)").
// The task page shows it as "tries".
func attemptsText(failed, maxRetries int) string {
	retries := "retries"
	if maxRetries == 1 {
		retries = "retry"
	}
	return fmt.Sprintf("%d failed of at most %d (the first run and %d %s)", failed, maxRetries+1, maxRetries, retries)
}
