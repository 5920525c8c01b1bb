package alloc

import "testing"

func TestConfigDefaults(t *testing.T) {
	t.Setenv(ResourceLimitEnv, "")
	ram := totalRAM()
	if ram <= 0 {
		t.Fatalf("totalRAM = %d", ram)
	}
	a := New(CPUProvider(), Config{})
	s := a.Stats()
	rws := int64(0.75 * float64(ram))
	if s.ResourceLimit != 499000 {
		t.Errorf("resource limit %d", s.ResourceLimit)
	}
	if want := min(int64(1.5*float64(rws)), int64(0.95*float64(ram))); s.MemoryLimit != want {
		t.Errorf("memory limit %d, want %d", s.MemoryLimit, want)
	}
	if s.CacheLimit != s.MemoryLimit {
		t.Errorf("cache limit %d, want %d", s.CacheLimit, s.MemoryLimit)
	}
	if want := min(int64(0.95*float64(rws)), s.MemoryLimit); s.GCLimit != want {
		t.Errorf("gc limit %d, want %d", s.GCLimit, want)
	}
	if s.MaxBufferLength != rws {
		t.Errorf("max buffer %d, want %d", s.MaxBufferLength, rws)
	}
	t.Logf("RAM %d: memory %d, gc %d, cache %d, max buffer %d",
		ram, s.MemoryLimit, s.GCLimit, s.CacheLimit, s.MaxBufferLength)
}

type unknownWorkingSet struct{ Provider }

func (unknownWorkingSet) RecommendedWorkingSet() int64 { return 0 }

func TestUnknownWorkingSetDerivesFromRAM(t *testing.T) {
	ram := totalRAM()
	a := New(unknownWorkingSet{CPUProvider()}, Config{MemoryLimit: 1 << 62})
	if want := int64(0.95 * float64(int64(0.75*float64(ram)))); a.gcLimit != want {
		t.Fatalf("gc limit %d, want 0.95 x 0.75 x RAM = %d", a.gcLimit, want)
	}
}

func TestResourceLimitEnv(t *testing.T) {
	for _, c := range []struct {
		env  string
		cfg  int
		want int
	}{
		{"", 0, 499000},
		{"1234", 0, 1234},
		{"1234", 77, 77}, // Config wins
		{"0", 0, 499000},
		{"-5", 0, 499000},
		{"lots", 0, 499000},
	} {
		t.Setenv(ResourceLimitEnv, c.env)
		if got := New(CPUProvider(), Config{ResourceLimit: c.cfg}).ResourceLimit(); got != c.want {
			t.Errorf("env %q cfg %d: limit %d, want %d", c.env, c.cfg, got, c.want)
		}
	}
}

func TestReleaseThresholdArithmetic(t *testing.T) {
	// MLX compares in double: 540 >= 0.9*600 must hold exactly.
	if !(float64(540) >= 0.9*float64(int64(600))) {
		t.Fatalf("0.9*600 rounds above 540")
	}
}
