// Package ops holds the composite operations that model families are written
// in: normalisations, projections, rotary embeddings, attention, activations,
// feed-forward blocks, mixtures of experts, recurrent mixers and latent
// attention.
//
// Every function here is an ordinary generic Go function over a
// [poot.Builder] and its [poot.Traced] handles. It appends primitive equations
// only. The named operations record themselves as composites
// ([poot.Builder.Composite]): a record with the composite's name, typed
// attributes, operands and results around its body, so printers fold them,
// the streamed lowering writes each as one statement and a backend may run a
// fused kernel chosen by name and attributes. None of them is an opcode: an
// interpreter that implements the primitives runs every body, and the bodies
// are the specification that fused kernels are checked against.
//
// The composites and their attributes (operands in order; "_" marks one
// that may be absent):
//
//	rmsnorm          x, w_          epsilon, one_plus[, heads]
//	layernorm        x, w_, bias_   epsilon, one_plus
//	l2norm           x              epsilon[, heads]
//	linear           x, w, bias_
//	rope             x, cos, sin    heads, layout ("neox", "interleaved"), dims
//	causal_mask      pos            keys, window, chunk
//	attention        q, k, v, mask, sinks_
//	                                heads, kv_heads, head_dim, value_dim, rows,
//	                                scale, soft_cap, sinks
//	softmax          x              axis
//	logsumexp        x              axis
//	sigmoid, silu, gelu, gelu_erf   x
//	swiglu, geglu, geglu_erf        gate, up
//	swiglu_clamped   gate, up       limit, alpha
//	soft_cap         x              cap
//	moe              x, router, router_bias_, selection_bias_, gate, up, down,
//	                 gate_bias_, up_bias_, down_bias_, shared_gate_,
//	                 shared_up_, shared_down_, shared_router_
//	                                form ("sparse", "grouped", "dense"), top_k,
//	                                gating, groups, top_groups, group_score,
//	                                renormalize, scale, scale_inputs,
//	                                activation, alpha, limit
//	causal_conv      x, state, weight, bias_            (results y, state)
//	gated_delta      q, k, v, g, beta, z, norm_weight_, state
//	                                key_heads, value_heads, tiled_heads, scale,
//	                                l2_eps, norm_eps, chunk (results o, state)
//	gated_delta_rule q, k, v, g, beta, state            (as gated_delta)
//	mamba2_ssm       x, dt, b, c, dt_bias, a_log, d, state
//	                                heads, groups, chunk (results y, state)
//	latent_kv        x, kv_a, kv_a_norm, cos, sin
//	                                kv_lora_rank, rope_dim, epsilon
//	latent_attention q, cache, mask, kv_b_, k_b_t_, v_b_
//	                                heads, nope_dim, rope_dim, value_dim,
//	                                kv_lora_rank, rows, scale, absorb
//
// The other functions (feed-forward blocks, the gated delta net mixer, the
// router, cache indices, latent queries) record plain scopes around the
// composites they call.
//
// What ops is for: the arithmetic of a model, written so a family reads like
// its paper. There is no error plumbing: the builder keeps the first error
// (an operand of the wrong shape, a missing weight, an inconsistent
// hyperparameter reported through Builder.Fail), and every later call returns
// a poisoned handle. Shape arithmetic goes through Builder.Dim, which is safe
// after an error, so no function here panics on any input.
//
// What ops is not for: it knows nothing about checkpoints, weight names,
// step specifications, KV-cache paging, batching policy or backends. A weight
// is whatever handle the family passes (any float dtype for contractions,
// read as stored; norms and biases are cast to F32 explicitly). Host helpers
// (rotary frequency tables) are plain functions of their configuration.
//
// Conventions shared by the package:
//   - Activations are F32. A sequence of T new tokens is a matrix [T, C]; a
//     batch of R sequences of T tokens each is the same matrix with R*T rows.
//   - Multi-head values keep heads packed on the last axis, [T, H*D]; the
//     functions that need heads take their count.
//   - A zero poot.Traced value means "absent" for optional operands (a bias,
//     a norm weight, attention sinks).
//   - Positions are the absolute I32 positions of the step's new tokens (the
//     SlotPos slot), and masks are built from them in the graph.
package ops
