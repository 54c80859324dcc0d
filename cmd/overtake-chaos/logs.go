package main

import (
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapCore writes Warn and above as JSON lines to w.
func zapCore(w io.Writer) zapcore.Core {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zapcore.NewCore(enc, zapcore.AddSync(w), zapcore.WarnLevel)
}
