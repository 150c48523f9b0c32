package faultmatrix

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SeedEnv names the variable that, when set and no -fault-matrix.seed is
// given, fixes the rotation instead of the day number: CI pins a slice whose cells have all been seen to
// pass, so a cell not yet validated turns no landing red.
const SeedEnv = "SITERECOVERY_FAULT_MATRIX_SEED"

// The flags of every matrix. A run without -fault-matrix.all or
// -fault-matrix.only covers a slice picked by the seeded rotation; the seed
// changes every day and is printed, so that a failed slice can be rerun:
//
//	go test ./test/e2e/protection -run TestProtectionFaultMatrix -args -fault-matrix.seed=20423
var (
	flagAll   = flag.Bool("fault-matrix.all", false, "run every cell of the fault matrix")
	flagSeed  = flag.Uint64("fault-matrix.seed", 0, "seed of the rotation that picks the cells (default: "+SeedEnv+", else today's day number)")
	flagCells = flag.Int("fault-matrix.cells", 0, "how many cells a run without -fault-matrix.all covers (default: the matrix's own)")
	flagOnly  = flag.String("fault-matrix.only", "", "run only the cells whose name contains this")
)

// Pick returns the cells this run covers, in the order to run them, and the
// seed that picked them.
//
// With -fault-matrix.all every cell runs; with -fault-matrix.only every cell
// whose name contains it. Otherwise the run covers n cells (or
// -fault-matrix.cells), drawn only from those validated accepts: cells that
// have all been seen to pass, so that the rotation in make test never lands a
// cell still under investigation. A nil validated accepts every cell.
//
// The seed orders every run, a full one too, so that which cells share a zone
// and which follow which varies from run to run.
func Pick[C fmt.Stringer](matrix []C, validated func(C) bool, n int) ([]C, uint64) {
	out := slices.Clone(matrix)
	if *flagOnly != "" {
		out = slices.DeleteFunc(out, func(c C) bool { return !strings.Contains(c.String(), *flagOnly) })
	}
	s := Seed()
	rng := rand.New(rand.NewPCG(s, 0x5eed))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	if *flagAll || *flagOnly != "" {
		return out, s
	}
	if validated != nil {
		out = slices.DeleteFunc(out, func(c C) bool { return !validated(c) })
	}
	if *flagCells > 0 {
		n = *flagCells
	}
	return out[:min(n, len(out))], s
}

// Seed is the rotation's seed: -fault-matrix.seed, else SeedEnv, else today's
// day number.
func Seed() uint64 {
	if *flagSeed != 0 {
		return *flagSeed
	}
	if s, _ := strconv.ParseUint(os.Getenv(SeedEnv), 10, 64); s != 0 {
		return s
	}
	return uint64(time.Now().Unix() / 86400)
}

// Announce logs which cells run and how to run them again.
func Announce[C fmt.Stringer](t testing.TB, picked []C, seed uint64) {
	t.Helper()
	names := make([]string, len(picked))
	for i, c := range picked {
		names[i] = c.String()
	}
	t.Logf("fault matrix seed %d (-fault-matrix.seed=%d reproduces it): %d cells: %s", seed, seed, len(picked), strings.Join(names, "; "))
}
