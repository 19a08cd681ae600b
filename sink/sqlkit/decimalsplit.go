package sqlkit

// SplitDecimal is ParseDecimal's reading of s without building the
// number: whether it is negative, the digits of its integer and
// fractional parts (one or more in all, leading and trailing zeros kept)
// and the exponent of the last digit, so that s is ±(intPart frac) ×
// 10^exp; ok is ParseDecimal's. A sink that encodes decimals itself (the
// PostgreSQL sink's COPY: docs/performance.md, "Round five") reads them
// with it, so as to accept exactly what ParseDecimal accepts.
func SplitDecimal(s string) (neg bool, intPart, frac string, exp int64, ok bool) {
	sign, intPart, frac, exp, ok := splitDecimal(s)
	return sign == "-", intPart, frac, exp, ok
}
