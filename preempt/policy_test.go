package preempt_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/preempt"
)

func TestWithDefaults(t *testing.T) {
	t.Run("zero policy", func(t *testing.T) {
		p := preempt.Policy{}.WithDefaults()
		require.Equal(t, preempt.DefaultMinRunTime, p.MinRunTime)
		require.Equal(t, preempt.DefaultMaxPreemptions, p.MaxPreemptions)
		require.Equal(t, preempt.DefaultMinLevelGap, p.MinLevelGap)
		require.Equal(t, preempt.DefaultFleetDeferral, p.FleetDeferral)
		require.False(t, p.Disabled)
		require.NoError(t, p.Validate())
	})
	t.Run("set fields kept", func(t *testing.T) {
		in := preempt.Policy{
			MinRunTime:     time.Second,
			MaxPreemptions: preempt.Unlimited,
			MinLevelGap:    2,
			NeverPreempt:   []int{1},
			NeverPreempted: []int{0},
			FleetDeferral:  preempt.DeferForever,
			Disabled:       true,
		}
		require.Equal(t, in, in.WithDefaults())
	})
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		policy  preempt.Policy
		wantErr []string // substrings, one per problem; nil means valid
	}{
		{name: "zero", policy: preempt.Policy{}},
		{name: "unlimited", policy: preempt.Policy{MaxPreemptions: preempt.Unlimited}},
		{name: "full", policy: preempt.Policy{MinRunTime: time.Second, MaxPreemptions: 1, MinLevelGap: 3, NeverPreempt: []int{0}, NeverPreempted: []int{5}}},
		{name: "negative min run time", policy: preempt.Policy{MinRunTime: -time.Second}, wantErr: []string{"MinRunTime is -1s"}},
		{name: "defer forever", policy: preempt.Policy{FleetDeferral: preempt.DeferForever}},
		{name: "fleet deferral below forever", policy: preempt.Policy{FleetDeferral: -2}, wantErr: []string{"FleetDeferral is -2ns"}},
		{name: "max preemptions below unlimited", policy: preempt.Policy{MaxPreemptions: -2}, wantErr: []string{"MaxPreemptions is -2"}},
		{name: "negative gap", policy: preempt.Policy{MinLevelGap: -1}, wantErr: []string{"MinLevelGap is -1"}},
		{name: "negative never preempt", policy: preempt.Policy{NeverPreempt: []int{2, -1}}, wantErr: []string{"NeverPreempt holds level -1"}},
		{name: "negative never preempted", policy: preempt.Policy{NeverPreempted: []int{-3}}, wantErr: []string{"NeverPreempted holds level -3"}},
		{
			name:    "all problems reported",
			policy:  preempt.Policy{MinRunTime: -1, MaxPreemptions: -5, MinLevelGap: -1},
			wantErr: []string{"MinRunTime", "MaxPreemptions", "MinLevelGap"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.Validate()
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, errors.Is(err, preempt.ErrInvalidPolicy))
			for _, s := range tt.wantErr {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestValidateDoesNotAllocate(t *testing.T) {
	p := preempt.Policy{NeverPreempt: []int{1, 2}, NeverPreempted: []int{0}}
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = p.Validate() }))
}
