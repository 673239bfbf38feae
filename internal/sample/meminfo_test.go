package sample

import "testing"

func TestMeminfoUsed(t *testing.T) {
	const max62 = 1 << 62
	for _, tc := range []struct {
		name            string
		m               Meminfo
		ram, swap       uint64 // processes' RAM and swap, bytes
		used, swapUsed  uint64
		notRAM, notSwap int64
	}{
		{name: "plain", m: Meminfo{MemTotal: 1000, MemAvailable: 400, SwapTotal: 100, SwapFree: 30},
			ram: 500, swap: 50, used: 600, swapUsed: 70, notRAM: 100, notSwap: 20},
		{name: "processes above used", m: Meminfo{MemTotal: 1000, MemAvailable: 400},
			ram: 700, used: 600, notRAM: -100},
		{name: "malformed: available above total, free above total",
			m:   Meminfo{MemTotal: 100, MemAvailable: 200, SwapTotal: 10, SwapFree: 20},
			ram: 5, swap: 5, notRAM: -5, notSwap: -5},
		{name: "huge figures clamp instead of overflowing", m: Meminfo{MemTotal: 1<<64 - 1},
			ram: 1<<64 - 1, used: 1<<64 - 1, notRAM: 0},
		{name: "huge used", m: Meminfo{MemTotal: 1<<64 - 1}, used: 1<<64 - 1, notRAM: max62},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			if got := m.Used(); got != tc.used {
				t.Errorf("Used() = %d, want %d", got, tc.used)
			}
			if got := m.SwapUsed(); got != tc.swapUsed {
				t.Errorf("SwapUsed() = %d, want %d", got, tc.swapUsed)
			}
			if got := m.NotInProcess(tc.ram); got != tc.notRAM {
				t.Errorf("NotInProcess(%d) = %d, want %d", tc.ram, got, tc.notRAM)
			}
			if got := m.SwapNotInProcess(tc.swap); got != tc.notSwap {
				t.Errorf("SwapNotInProcess(%d) = %d, want %d", tc.swap, got, tc.notSwap)
			}
		})
	}
}
