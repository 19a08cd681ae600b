package cmd

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// The metrics file is Prometheus's text exposition format, version 0.0.4
// (what node_exporter's textfile collector and promtool read), written
// here in a few lines rather than through the protobuf model of
// client_model and common's encoder.

// family is one metric: its HELP and TYPE lines and a sample per series.
type family struct {
	name, help, kind string // kind is "counter" or "gauge"
	samples          []sample
}

// sample is one series of a family: label name and value pairs, in order.
type sample struct {
	labels []string
	value  float64
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// writeText appends f in the text format to b.
func (f family) writeText(b *bytes.Buffer) {
	b.WriteString("# HELP " + f.name + " " + helpEscaper.Replace(f.help) + "\n")
	b.WriteString("# TYPE " + f.name + " " + f.kind + "\n")
	for _, s := range f.samples {
		b.WriteString(f.name)
		sep := "{"
		for i := 0; i+1 < len(s.labels); i += 2 {
			b.WriteString(sep + s.labels[i] + `="` + labelEscaper.Replace(s.labels[i+1]) + `"`)
			sep = ","
		}
		if sep == "," {
			b.WriteByte('}')
		}
		b.WriteString(" " + formatValue(s.value) + "\n")
	}
}

// formatValue is v as the format writes a sample value.
func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
