package sync

import (
	"strconv"
	"time"
	"unsafe"
)

// boxes puts the values of a page's rows into their interfaces without
// one allocation per value. A string, int64, float64 or time.Time stored
// in an `any` lives in a block of its own that Go allocates for it (16,
// 8, 8 and 24 bytes): 4 to 6 small objects per record, a quarter of the
// mapping's CPU with the garbage collection they cost
// (docs/performance.md, "Round six: the mapping"). Here the value is
// written once into a block shared by many rows' values, and the
// interface points at it, as Go's own boxing would point at a block of
// its own.
//
// This holds because an interface's value is never written through: a
// slot of a block is written once, before the interface pointing at it
// exists, and never again (the blocks are only ever sliced forward), so
// every interface keeps the value it was made with. The garbage collector
// keeps a whole block alive while any interface points into it, as it
// keeps the values slab of the rows (Mapper.values). The interface's
// layout, a type word then a data word pointing at the value, is the one
// the runtime and reflect rely on for every type that is not
// pointer-shaped; TestBoxesAreOrdinaryValues checks the values against
// Go's own boxing: equality, type switches, map keys, fmt.
type boxes struct {
	strs   slab[string]
	ints   slab[int64]
	floats slab[float64]
	times  slab[time.Time]
	text   []byte // the hashes' texts (hashText)
}

// slab hands out slots of blocks that grow from 16 slots to 1,024, so a
// page of a few records does not pay for a large block.
type slab[T any] struct {
	free []T
	size int
}

func (s *slab[T]) put(v T) unsafe.Pointer {
	if len(s.free) == 0 {
		s.size = min(max(2*s.size, 16), 1024)
		s.free = make([]T, s.size)
	}
	p := &s.free[0]
	*p = v
	s.free = s.free[1:]
	return unsafe.Pointer(p)
}

// eface is the layout of an `any`.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

func typeWord(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

var (
	stringType = typeWord("")
	int64Type  = typeWord(int64(0))
	floatType  = typeWord(float64(0))
	timeType   = typeWord(time.Time{})
)

func boxAt(typ, data unsafe.Pointer) (v any) {
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, data
	return v
}

func (b *boxes) string(s string) any   { return boxAt(stringType, b.strs.put(s)) }
func (b *boxes) int64(n int64) any     { return boxAt(int64Type, b.ints.put(n)) }
func (b *boxes) float64(f float64) any { return boxAt(floatType, b.floats.put(f)) }
func (b *boxes) time(t time.Time) any  { return boxAt(timeType, b.times.put(t)) }

// hashText is strconv.FormatUint(h, 16), its bytes carved from a block
// shared by many rows' hashes and never written again once taken.
func (b *boxes) hashText(h uint64) string {
	if cap(b.text)-len(b.text) < 16 {
		b.text = make([]byte, 0, min(max(2*cap(b.text), 16*16), 16*1024))
	}
	start := len(b.text)
	b.text = strconv.AppendUint(b.text, h, 16)
	return unsafe.String(&b.text[start], len(b.text)-start)
}
