package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestCalibrationFactor reads the median master together over the median
// master alone, and none without both.
func TestCalibrationFactor(t *testing.T) {
	u := time.Microsecond
	c := calibration{Alone: []time.Duration{90 * u, 80 * u, 100 * u}, Together: []time.Duration{200 * u, 100 * u, 120 * u}}
	assert.InDelta(t, 120.0/90, c.factor(), 1e-9)
	assert.Zero(t, calibration{Alone: []time.Duration{90}}.factor(), "no together step")
	assert.Zero(t, calibration{Together: []time.Duration{90}}.factor(), "no alone step")

	res := &shardResult{Calib: []calibration{c, {Alone: []time.Duration{100 * u}, Together: []time.Duration{150 * u}}, {Alone: []time.Duration{100 * u}, Together: []time.Duration{110 * u}}}}
	assert.InDelta(t, 120.0/90, res.calibFactor(), 1e-9, "the median round's")
	lo, hi := res.aloneRange()
	assert.Equal(t, 80*u, lo)
	assert.Equal(t, 100*u, hi)
	assert.Equal(t, "; this machine (the calibration row): the same call 1.333× dearer with every master busy, and alone it ranged max/min 1.250", res.machineNote())
	assert.Empty(t, (&shardResult{}).machineNote(), "no calibration, no note")

	tb := &table{}
	res.calibRow(tb)
	if assert.Len(t, tb.rows, 1) {
		assert.Equal(t, "1.333", tb.rows[0].value)
		assert.Contains(t, tb.rows[0].note, "info: the call alone ranged 80.00–100.0 µs (max/min 1.250) over the masters and rounds")
		assert.Contains(t, tb.rows[0].note, "90.00/80.00/100.0 µs alone, 200.0/100.0/120.0 together; 100.0 µs alone, 150.0 together")
	}
}
