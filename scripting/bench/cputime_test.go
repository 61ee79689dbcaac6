package bench

import "testing"

// reportCPU starts measuring the process's CPU time; the function it returns reports it per
// iteration as cpu-ns/op. Call it just before b.Loop and the returned function after it.
// Other processes on the same cores stretch ns/op (wall clock) but hardly cpu-ns/op, so
// runs on a shared machine compare better by the latter. For the isolated cases it is the
// engine's side only, like their allocations.
func reportCPU(b *testing.B) (stop func()) {
	start, ok := processCPU()
	return func() {
		end, ok2 := processCPU()
		if ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
