package keytable

import (
	"math/rand/v2"
	"testing"
)

// Through random sets and deletes, over few keys (many replacements) and many (many
// merges), the table holds what a Go map holds.
func TestTableIsAMap(t *testing.T) {
	for _, keys := range []uint64{50, 5000, 1 << 40} {
		rng := rand.New(rand.NewPCG(keys, 1))
		var tab Table[[2]uint64]
		want := map[uint64][2]uint64{}
		for step := range 200_000 {
			k := rng.Uint64N(keys)
			switch rng.IntN(4) {
			case 0:
				tab.Delete(k)
				delete(want, k)
			default:
				v := [2]uint64{uint64(step), k}
				tab.Set(k, v)
				want[k] = v
			}
			if step%997 == 0 || step == 199_999 {
				if tab.Len() != len(want) {
					t.Fatalf("keys<%d, step %d: Len %d, want %d", keys, step, tab.Len(), len(want))
				}
				probe := rng.Uint64N(keys)
				got, ok := tab.Get(probe)
				if w, wok := want[probe]; ok != wok || got != w {
					t.Fatalf("keys<%d, step %d: Get(%d) = %v, %v; want %v, %v", keys, step, probe, got, ok, w, wok)
				}
			}
		}
		for k, v := range want {
			if got, ok := tab.Get(k); !ok || got != v {
				t.Fatalf("keys<%d: Get(%d) = %v, %v; want %v", keys, k, got, ok, v)
			}
		}
	}
}

// BenchmarkTableBytesPerEntry: a million entries of 16-byte values, set in random
// order, against a Go map of the same.
func BenchmarkTableBytesPerEntry(b *testing.B) {
	const n = 1_000_000
	keys := make([]uint64, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	b.Run("table", func(b *testing.B) {
		for b.Loop() {
			var t Table[[2]uint64]
			for i, k := range keys {
				t.Set(k, [2]uint64{uint64(i), k})
			}
			b.ReportMetric(float64(24*len(t.keys)+40*len(t.delta))/n, "bytes/entry")
		}
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			m := map[uint64][2]uint64{}
			for i, k := range keys {
				m[k] = [2]uint64{uint64(i), k}
			}
		}
	})
}
