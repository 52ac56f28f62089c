package vllm

import (
	"fmt"
	"math"
	"strings"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/model"
	"github.com/kvcfg/kvcfg/weights"
)

// GiB is 2^30 bytes, the unit of vLLM's memory log lines.
const GiB = int64(1) << 30

// EstimateInput is what the profile-run estimate reads besides the model:
// the layout, the scheduler limits that size the dummy batch and the model
// dtype.
type EstimateInput struct {
	// TP and PP are the tensor and pipeline parallel sizes (0 means 1).
	TP, PP int
	// Stage is the pipeline stage to estimate, 0 to PP-1; a negative value
	// is the last stage, the one that computes logits.
	Stage int
	// MaxNumBatchedTokens is the dummy forward's token count; MaxNumSeqs
	// the dummy sampler batch (min(max_num_seqs, tokens) requests).
	MaxNumBatchedTokens, MaxNumSeqs int
	// DTypeBytes is the model dtype's size (2 for bf16/fp16, 4 for
	// float32); 0 means 2.
	DTypeBytes int
	// Version is the vLLM release (--vllm-version; "" is the newest): the
	// sampler's top-k/top-p and the non-torch baseline changed between
	// releases.
	Version string
	// Sampler is the top-k/top-p backend of the dummy sampler run:
	// SamplerFlashInfer (the log says "Using FlashInfer for top-p & top-k
	// sampling"), SamplerNative (PyTorch), or "" for the release's default
	// (DefaultSampler).
	Sampler string
	// Interconnect is how the node's GPUs are wired (gpu.GPU.Interconnect:
	// "nvswitch", "nvlink", "pcie", "xgmi"); it sizes NCCL's buffers at
	// TP >= 2. "" is taken as "nvswitch", the H100 logs' figure.
	Interconnect string
}

// The top-k/top-p backends of vLLM's V1 sampler
// (vllm/v1/sample/ops/topk_topp_sampler.py).
const (
	// SamplerNative is the PyTorch path (forward_native): a full sort of
	// the vocabulary before 0.17, vllm#33538's Triton filter from 0.17.
	SamplerNative = "native"
	// SamplerFlashInfer is FlashInfer's top_k_top_p_sampling_from_logits
	// (forward_cuda), no sort.
	SamplerFlashInfer = "flashinfer"
)

// DefaultSampler returns the top-k/top-p backend a release runs when
// VLLM_USE_FLASHINFER_SAMPLER is not set. The V1 sampler takes FlashInfer
// whenever flashinfer is importable and the variable is unset (vllm#11394)
// until vllm#26859 (0.11.1) made it opt-in, and vllm#40376 (after 0.19)
// made it the default again. 0.8.x turned it off for FlashInfer 0.2.3 and
// later (vllm#15777 adapted the API in 0.9); before 0.11.0 the wheel did
// not install flashinfer (the Docker image did), and 0.11.0 lists
// flashinfer-python among its CUDA requirements. So: FlashInfer for 0.11.0
// and after 0.19, PyTorch otherwise; a 0.9 or 0.10 run from the Docker image
// says "Using FlashInfer" in its log (EstimateInput.Sampler).
func DefaultSampler(version string) string {
	_, rel, _, err := resolve(version)
	if err != nil {
		rel = newest
	}
	if rel.atLeast(0, 20, 0) || (rel.atLeast(0, 11, 0) && !rel.atLeast(0, 11, 1)) {
		return SamplerFlashInfer
	}
	return SamplerNative
}

// Term is one named part of a predicted figure and the vLLM source that
// allocates it.
type Term = engine.Term

// Source files of the terms (vllm-project/vllm, v0.19.0).
const (
	srcSampler  = "vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run; vllm/v1/sample/sampler.py (float32 logits, softmax, random_sample's exponential noise); ops/topk_topp_sampler.py (sort before 0.17, Triton from 0.17)"
	srcFISample = "vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run (top_k = vocab − 1, top_p = 0.9); vllm/v1/sample/sampler.py (float32 logits); ops/topk_topp_sampler.py flashinfer_sample → flashinfer.sampling.top_k_top_p_sampling_from_logits (top_k_mask_logits' masked copy, softmax)"
	srcDummyRun = "vllm/v1/worker/gpu_model_runner.py _dummy_run (profile_run: max_num_batched_tokens tokens)"
	srcMLP      = "vllm/model_executor/layers/activation.py SiluAndMul; linear.py MergedColumnParallelLinear"
	srcMoE      = "vllm/model_executor/layers/fused_moe/fused_moe.py TritonExperts.workspace_shapes (persistent modular-kernel workspace)"
	srcPP       = "vllm/v1/worker/gpu_model_runner.py intermediate_tensors (hidden_states, residual) for pipeline stages"
	srcMM       = "vllm/v1/worker/gpu_model_runner.py profile_run: the multimodal encoder's dummy batch (max_num_batched_tokens of image tokens), inputs_embeds"
)

// Estimate returns the figures vLLM's profile run would measure on the
// last pipeline stage for model s, as kvcfg estimates them without a GPU
// (EstimateStage with the default sampler batch of 1024 requests).
func Estimate(s *model.Spec, tp, pp, maxNumBatchedTokens int) Memory {
	m, _ := EstimateStage(s, EstimateInput{TP: tp, PP: pp, Stage: -1, MaxNumBatchedTokens: maxNumBatchedTokens, MaxNumSeqs: 1024})
	return m
}

// EstimateStage returns the figures vLLM's profile run would measure on
// one pipeline stage, and the terms of its activation peak:
//
//   - weights: the weights package's per-rank estimate (0 when the config
//     has no parameter counts; a real checkpoint's bytes replace it);
//   - activation peak (torch_peak_increase): the larger of the dummy
//     forward of MaxNumBatchedTokens tokens (the MLP's gate/up and
//     activation outputs per rank, four hidden-state copies) and the dummy
//     sampler on the last stage (min(MaxNumSeqs, tokens) rows of logits
//     over the whole vocabulary: the model-dtype logits, their float32
//     copy, the softmax probabilities and the exponential noise of random
//     sampling, 14 bytes per element in bf16, 24 more before 0.17 (the
//     sort-based top-k/top-p) unless FlashInfer samples (its masked copy
//     and softmax, 14 bytes in all); plus the kept hidden states), plus what
//     stays allocated across
//     both: the fused-MoE workspace (tokens × top_k × (max(I, H) +
//     max(2I, H)) elements, I the expert intermediate per rank), the
//     pipeline's intermediate tensors and a VLM's inputs_embeds and the
//     vision tower's hidden states over the dummy images (tokens ×
//     patches per token × vision hidden);
//   - non-torch memory (nonTorchBytes): 0.25 GiB alone (0.13 before
//     0.18), 0.07 GiB on a pipeline stage without TP; at TP >= 2 2.07 GiB
//     plus 0.045 GiB per further rank on NVSwitch nodes (as vLLM 0.19 logs
//     print it on H100), elsewhere the single-GPU figure, plus before
//     0.11 NCCL's PCIe buffers (and the custom all-reduce's on A100
//     NVLink), which later releases leave in the baseline snapshot;
//   - CUDA graphs (subtracted by the releases that profile them): 25 MiB
//     per decoder layer of the stage.
func EstimateStage(s *model.Spec, in EstimateInput) (Memory, []Term) {
	tp, pp := max(in.TP, 1), max(in.PP, 1)
	var m Memory
	if s == nil {
		return m, nil
	}
	if w, err := weights.PerRank(s, weights.Layout{TP: tp, PP: pp}); err == nil {
		m.WeightsBytes = w
	}
	_, rel, _, err := resolve(in.Version)
	if err != nil {
		rel = newest
	}
	sampler := in.Sampler
	if sampler == "" {
		sampler = DefaultSampler(in.Version)
	}
	terms := activationTerms(s, in, tp, pp, sampler, !rel.atLeast(0, 17, 0))
	for _, t := range terms {
		m.ActivationBytes += t.Bytes
	}
	m.NonTorchBytes = nonTorchBytes(tp, pp, rel, in.Interconnect)
	m.CUDAGraphBytes = int64((s.NumLayers+pp-1)/pp) * 25 << 20
	return m, terms
}

// NCCL's and the custom all-reduce's device memory off NVSwitch, MiB.
const (
	// ncclPCIeMiB is what NCCL's communicators take on a rank over PCIe
	// (2 to 4 channels, each with its SIMPLE, LL and LL128 buffers): the
	// figure SGLang's logs print for it (engine/sglang
	// DistributedInitMiB, RTX 4090 TP 2 and 4 × L4 TP 4).
	ncclPCIeMiB = 195
	// customAllReduceMiB is the custom all-reduce's cudaMalloc buffers
	// (distributed/device_communicators/custom_all_reduce.py
	// create_shared_buffer: meta_size + max_size → 10 MiB at cudaMalloc's
	// 2 MiB granularity, and max_size = 8 MiB; rank_data is a torch
	// tensor and counts as neither), on NVLink nodes at TP 2, 4, 6, 8.
	customAllReduceMiB = 10 + 8
)

// nonTorchBytes is the non-torch increase per layout: what the CUDA
// driver holds beyond torch's allocator between the worker's baseline
// snapshot and the end of the profile run (memory_profiling's
// non_torch_increase). Alone on one GPU 0.13 GiB before 0.18 (Qwen3-14B
// on 0.15 to 0.17), 0.25 GiB from 0.18; 0.07 GiB on a pipeline stage
// without TP. At TP >= 2:
//   - on an NVSwitch node (and where the wiring is not known) 2.07 GiB
//     plus 0.045 GiB per further rank, as vLLM 0.19 prints it on H100:
//     NCCL's many channels connected during the profile run, the
//     symmetric-memory and FlashInfer all-reduce-fusion workspaces;
//   - over PCIe and on A100 NVLink nodes before 0.11 the single-GPU
//     figure plus NCCL's PCIe buffers and, on NVLink, the custom
//     all-reduce's: gpu_worker.py init_device took the baseline
//     MemorySnapshot before init_worker_distributed_environment, so the
//     communicators count as non-torch;
//   - from 0.11 (vllm#25359 runs init_worker_distributed_environment
//     before the snapshot) the communicators and the custom all-reduce
//     are in the baseline, and the single-GPU figure remains.
func nonTorchBytes(tp, pp int, rel release, interconnect string) int64 {
	base := GiB / 4
	if !rel.atLeast(0, 18, 0) {
		base = 130 * GiB / 1000
	}
	switch {
	case tp >= 2 && (interconnect == "pcie" || interconnect == "nvlink"):
		if rel.atLeast(0, 11, 0) {
			return base
		}
		b := base + ncclPCIeMiB<<20
		if interconnect == "nvlink" && (tp == 2 || tp == 4 || tp == 6 || tp == 8) {
			b += customAllReduceMiB << 20
		}
		return b
	case tp >= 2:
		return 2070*GiB/1000 + int64(tp-2)*45*GiB/1000
	case pp >= 2:
		return 70 * GiB / 1000
	}
	return base
}

// activationTerms are the parts of the profile run's torch peak on one
// stage: the phase that peaks (forward or sampler) and what both share.
//
// The dummy sampler (top_k = vocab − 1, top_p = 0.9, so both filters
// run) holds the model-dtype logits and their float32 copy, then:
//   - native: the softmax probabilities and random_sample's exponential
//     noise (4 + 4 bytes an element); before 0.17 (sortBefore017) the
//     top-k/top-p sorts the whole vocabulary first
//     (apply_top_k_top_p_pytorch: the sorted float32 values, their int64
//     indices, the sorted probabilities, the top-k gather and the scatter
//     back, 24 bytes an element); from 0.17 a Triton kernel filters in
//     place (vllm#33538);
//   - FlashInfer: top_k_mask_logits' masked float32 copy and the softmax
//     probabilities (4 + 4 bytes); top_p_sampling_from_probs samples
//     without a further vocabulary-sized tensor.
func activationTerms(s *model.Spec, in EstimateInput, tp, pp int, sampler string, sortBefore017 bool) []Term {
	b := int64(in.DTypeBytes)
	if b == 0 {
		b = 2
	}
	tokens := int64(max(in.MaxNumBatchedTokens, 0))
	h := int64(s.HiddenSize)
	f := s.FFN
	last := in.Stage < 0 || in.Stage >= pp-1
	var shared []Term
	if ws := moeWorkspace(s, tokens, tp, b); ws > 0 {
		shared = append(shared, Term{Name: "moe_workspace", Bytes: ws, Source: srcMoE})
	}
	if pp > 1 {
		shared = append(shared, Term{Name: "pipeline_intermediate_tensors", Bytes: 2 * tokens * h * b, Source: srcPP})
	}
	if s.Encoder && (in.Stage <= 0) {
		shared = append(shared, Term{Name: "multimodal_inputs_embeds", Bytes: tokens * h * b, Source: srcMM})
		if v := s.Vision; v != nil && v.Hidden > 0 {
			// The dummy images fill the batch's tokens; the tower's hidden
			// states cover PatchesPerToken patches per token.
			shared = append(shared, Term{Name: "multimodal_encoder_states", Bytes: tokens * int64(max(v.PatchesPerToken, 1)) * int64(v.Hidden) * b, Source: srcMM})
		}
	}
	// The forward: a dense layer's MLP outputs (gate/up and the activation's
	// output) per rank, and four hidden-state-sized tensors (residual,
	// normed input, attention or MLP output, the layer's output).
	inter := int64(f.Intermediate)
	if f.Experts > 0 {
		inter = int64(f.SharedIntermediate)
	}
	mats := int64(2)
	if f.Gated {
		mats = 3
	}
	fwd := Term{Name: "forward_activations", Bytes: tokens * (mats*inter/int64(tp) + 4*h) * b, Source: srcDummyRun + "; " + srcMLP}
	peak := fwd
	if last && f.VocabSize > 0 {
		seqs := min(int64(max(in.MaxNumSeqs, 1)), max(tokens, 1))
		per, src := b+4+4+4, srcSampler
		switch {
		case sampler == SamplerFlashInfer:
			src = srcFISample
		case sortBefore017:
			per += 24
		}
		smp := Term{Name: "sampler_logits", Bytes: seqs*int64(f.VocabSize)*per + 2*tokens*h*b, Source: src}
		if smp.Bytes > peak.Bytes {
			peak = smp
		}
	}
	return append([]Term{peak}, shared...)
}

// moeWorkspace is the fused-MoE kernels' workspace: two buffers of
// tokens × top_k rows, max(I, H) and max(2I, H) wide, I the expert
// intermediate size per TP rank. MXFP4 checkpoints (gpt-oss) run other
// kernels and get none.
func moeWorkspace(s *model.Spec, tokens int64, tp int, b int64) int64 {
	f := s.FFN
	if f.Experts == 0 || f.TopK == 0 {
		return 0
	}
	if s.Quant != nil && strings.Contains(strings.ToLower(s.Quant.Method), "mxfp4") {
		return 0
	}
	h := int64(s.HiddenSize)
	i := int64(f.ExpertIntermediate) / int64(tp)
	return tokens * int64(f.TopK) * (max(i, h) + max(2*i, h)) * b
}

// BudgetInput is a launch's memory budget question before launch: the
// layout and scheduler limits of EstimateInput, the release, the device's
// CUDA-visible total and what the user knows exactly.
type BudgetInput struct {
	EstimateInput
	// Version is --vllm-version ("latest" when empty).
	Version string
	// GPUMemoryUtilization is --gpu-memory-utilization (0: the release's
	// default).
	GPUMemoryUtilization float64
	// TotalBytes is the total CUDA reports (torch.cuda.mem_get_info()[1]).
	TotalBytes int64
	// WeightsBytes is the rank's exact weight bytes; 0 estimates them.
	WeightsBytes int64
	// EnforceEager is --enforce-eager: no CUDA graphs.
	EnforceEager bool
}

// PredictBudget returns vLLM's determine_available_memory for one stage
// before launch: requested = gpu_memory_utilization × total (rounded up
// from 0.13), minus the weights, the profile run's activation peak and
// non-torch increase (EstimateStage), minus the CUDA-graph estimate on
// releases that subtract it (0.20 on) unless --enforce-eager. Estimated
// lists the figures kvcfg estimated; ActivationTerms the activation's
// parts.
func PredictBudget(s *model.Spec, in BudgetInput) (MemoryReport, error) {
	var m MemoryReport
	if s == nil {
		return m, fmt.Errorf("%w: no model", ErrInvalidConfig)
	}
	if in.TotalBytes <= 0 {
		return m, fmt.Errorf("%w: no device total: give the GPU or its memory", ErrInvalidConfig)
	}
	prof, rel, _, err := resolve(in.Version)
	if err != nil {
		return m, err
	}
	r := rulesFor(prof, rel)
	util := in.GPUMemoryUtilization
	if util == 0 {
		util = r.defaultUtil
	}
	if util <= 0 || util > 1 {
		return m, fmt.Errorf("%w: gpu_memory_utilization %g is not in (0, 1]", ErrInvalidConfig, util)
	}
	ei := in.EstimateInput
	ei.Version = in.Version
	est, terms := EstimateStage(s, ei)
	m.TotalBytes, m.Source = in.TotalBytes, "profile"
	m.WeightsBytes = in.WeightsBytes
	if m.WeightsBytes == 0 {
		m.WeightsBytes = est.WeightsBytes
		m.Estimated = append(m.Estimated, "weights")
	}
	m.ActivationBytes, m.ActivationTerms = est.ActivationBytes, terms
	m.NonTorchBytes = est.NonTorchBytes
	m.Estimated = append(m.Estimated, "activation", "non_torch")
	if r.graphsSubtracted && !in.EnforceEager {
		m.CUDAGraphBytes = est.CUDAGraphBytes
		m.Estimated = append(m.Estimated, "cudagraph")
	}
	reqF := float64(in.TotalBytes) * util
	nonKV := m.WeightsBytes + m.ActivationBytes + m.NonTorchBytes + m.CUDAGraphBytes
	if r.ceilRequested {
		m.RequestedBytes = int64(math.Ceil(reqF))
	} else {
		m.RequestedBytes = int64(reqF)
	}
	m.AvailableKVBytes = m.RequestedBytes - nonKV
	return m, nil
}
