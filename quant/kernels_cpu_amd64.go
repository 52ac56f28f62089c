//go:build amd64 && !purego

package quant

import "golang.org/x/sys/cpu"

// hasAVX512 reports the CPU features the generated kernels need
// (AVX-512 F and BW; VL for the 256-bit forms they use).
var hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL
