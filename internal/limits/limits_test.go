package limits_test

import (
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/limits"
)

type budget struct {
	Files int
	Bytes int64
	Ops   uint32
	Ratio float64
	Time  time.Duration
}

func TestOr(t *testing.T) {
	def := budget{Files: 10, Bytes: 1 << 20, Ops: 100, Ratio: 0.5, Time: time.Second}
	tests := []struct {
		name      string
		set, want budget
	}{
		{"zero takes every default", budget{}, def},
		{"set fields are kept", budget{Files: 3, Bytes: 7, Ops: 1, Ratio: 2, Time: time.Minute}, budget{Files: 3, Bytes: 7, Ops: 1, Ratio: 2, Time: time.Minute}},
		{"negative is unset", budget{Files: -1, Bytes: 5, Ratio: -0.5, Time: -time.Second}, budget{Files: 10, Bytes: 5, Ops: 100, Ratio: 0.5, Time: time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := limits.Or(tc.set, def); got != tc.want {
				t.Errorf("Or(%+v) = %+v, want %+v", tc.set, got, tc.want)
			}
		})
	}
}

func TestOrPanicsOnOtherFields(t *testing.T) {
	type bad struct {
		N    int
		Name string
	}
	defer func() {
		if recover() == nil {
			t.Error("Or(struct with a string) did not panic")
		}
	}()
	limits.Or(bad{}, bad{N: 1})
}
