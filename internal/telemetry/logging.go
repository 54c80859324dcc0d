package telemetry

import (
	"go.uber.org/zap"

	"github.com/overtake/overtake/tracing"
)

// FieldAttempt is the key of a run's attempt (TaskInfo.Attempt) on the
// lines of a handler's logger (handlers.Logger).
const FieldAttempt = "task_attempt"

// TaskFields returns task_id, task_type and task_level.
func TaskFields(id, typ string, level int) []zap.Field {
	return []zap.Field{
		zap.String(tracing.FieldTaskID, id),
		zap.String(tracing.FieldTaskType, typ),
		zap.Int(tracing.FieldLevel, level),
	}
}

// LoggerOrNop returns l, or zap.NewNop() when l is nil.
func LoggerOrNop(l *zap.Logger) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return l
}
