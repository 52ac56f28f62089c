//go:build amd64 && !purego

package quant

import "golang.org/x/sys/cpu"

// hasAVX512 reports the CPU features the generated kernels need
// (AVX-512 F and BW; VL for the 256-bit forms they use).
var hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL

// hasAVX2 reports the features of the AVX2 kernels: AVX2 and F16C
// (VCVTPH2PS, VCVTPS2PH). x/sys/cpu does not report F16C; every CPU with
// AVX2, FMA and BMI2 (the x86-64-v3 level, which includes F16C) has it.
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasBMI2
