package ops

import (
	"fmt"
	"math"

	"github.com/pootlabs/poot"
)

// RopeLayout says which channels of a head a rotary embedding rotates
// together.
type RopeLayout uint8

const (
	// RopeNeoX rotates channel i with channel i + n/2 ("rotate half"; GPT-NeoX,
	// and llama.cpp's NEOX type: Qwen, Gemma, Phi and most Hugging Face
	// checkpoints).
	RopeNeoX RopeLayout = iota
	// RopeInterleaved rotates the adjacent pairs (2i, 2i+1) (GPT-J, llama2.c,
	// and llama.cpp's NORM type used by its llama family).
	RopeInterleaved
)

// RopeScaling names a context-extension scheme for rotary frequencies.
type RopeScaling uint8

const (
	// ScaleNone uses the frequencies theta^(-2i/n) unchanged.
	ScaleNone RopeScaling = iota
	// ScaleLinear divides every frequency by Factor (position interpolation).
	ScaleLinear
	// ScaleNTK raises the base to theta·Factor^(n/(n-2)) ("NTK-aware"
	// scaling), which leaves the highest frequency unchanged and divides the
	// lowest by Factor.
	ScaleNTK
	// ScaleYaRN blends interpolated and original frequencies with a linear
	// ramp between the dimensions whose wavelengths make BetaFast and
	// BetaSlow turns over OrigContext, and scales cos and sin by an attention
	// factor (Peng et al., 2023).
	ScaleYaRN
	// ScaleLlama3 keeps high frequencies, divides low frequencies by Factor,
	// and interpolates in between by wavelength bands set by LowFreqFactor,
	// HighFreqFactor and OrigContext (Llama 3.1).
	ScaleLlama3
)

// RopeConfig describes a rotary embedding's frequencies.
type RopeConfig struct {
	Dims    int     // rotated channels per head (n_rot), even; the rest pass through
	Theta   float64 // base, such as 10000 or 1e6
	Scaling RopeScaling
	Factor  float64 // context-extension factor (≥ 1) for every scaling but ScaleNone

	OrigContext int // the pre-training context length (YaRN, Llama 3)

	LowFreqFactor, HighFreqFactor float64 // Llama 3 bands (usually 1 and 4)

	BetaFast, BetaSlow float64 // YaRN ramp ends in turns; zero means 32 and 1
	// MScale and MScaleAllDim set YaRN's attention factor as
	// mscale(Factor, MScale)/mscale(Factor, MScaleAllDim) when both are
	// non-zero (DeepSeek); otherwise it is 0.1·ln(Factor) + 1.
	MScale, MScaleAllDim float64
	// AttnFactor overrides YaRN's attention factor when non-zero.
	AttnFactor float64
}

func (c RopeConfig) check() error {
	switch {
	case c.Dims < 2 || c.Dims%2 != 0:
		return fmt.Errorf("rotary dims %d must be even and at least 2", c.Dims)
	case !(c.Theta > 1):
		return fmt.Errorf("rotary base %v must exceed 1", c.Theta)
	case c.Scaling > ScaleLlama3:
		return fmt.Errorf("unknown rotary scaling %d", c.Scaling)
	case c.Scaling != ScaleNone && !(c.Factor > 0):
		return fmt.Errorf("rotary scaling factor %v must be positive", c.Factor)
	case (c.Scaling == ScaleYaRN || c.Scaling == ScaleLlama3) && c.OrigContext < 1:
		return fmt.Errorf("rotary scaling needs the original context length")
	case c.Scaling == ScaleLlama3 && !(c.HighFreqFactor > c.LowFreqFactor && c.LowFreqFactor > 0):
		return fmt.Errorf("llama3 frequency factors low %v, high %v: want 0 < low < high", c.LowFreqFactor, c.HighFreqFactor)
	case c.Scaling == ScaleNTK && c.Dims == 2:
		return fmt.Errorf("NTK scaling needs more than 2 rotary dims")
	}
	return nil
}

func (c RopeConfig) base() float64 {
	if c.Scaling == ScaleNTK {
		n := float64(c.Dims)
		return c.Theta * math.Pow(c.Factor, n/(n-2))
	}
	return c.Theta
}

func yarnMScale(scale, m float64) float64 {
	if scale <= 1 {
		return 1
	}
	return 0.1*m*math.Log(scale) + 1
}

// yarnRange is the ramp [low, high] over frequency indices: the dimension
// whose wavelength makes r turns over the original context is
// n·ln(L/(2πr)) / (2 ln θ); floor and ceil as the reference implementations.
func (c RopeConfig) yarnRange() (low, high float64) {
	fast, slow := c.BetaFast, c.BetaSlow
	if fast == 0 {
		fast = 32
	}
	if slow == 0 {
		slow = 1
	}
	n, l := float64(c.Dims), float64(c.OrigContext)
	corr := func(r float64) float64 { return n * math.Log(l/(r*2*math.Pi)) / (2 * math.Log(c.Theta)) }
	low = math.Max(math.Floor(corr(fast)), 0)
	high = math.Min(math.Ceil(corr(slow)), n-1)
	if low == high {
		high += 0.001
	}
	return low, high
}

// AttentionFactor is the factor by which cos and sin are multiplied: YaRN's
// attention scaling ("mscale"), and 1 for every other scaling.
func (c RopeConfig) AttentionFactor() float64 {
	if c.Scaling != ScaleYaRN {
		return 1
	}
	if c.AttnFactor != 0 {
		return c.AttnFactor
	}
	if c.MScale != 0 && c.MScaleAllDim != 0 {
		return yarnMScale(c.Factor, c.MScale) / yarnMScale(c.Factor, c.MScaleAllDim)
	}
	return yarnMScale(c.Factor, 1)
}

// InvFreq computes the Dims/2 inverse frequencies on the host in float64,
// for a table bound as a constant or for checking RopeInvFreq.
func (c RopeConfig) InvFreq() ([]float64, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	half := c.Dims / 2
	inv := make([]float64, half)
	base := c.base()
	for i := range inv {
		inv[i] = math.Pow(base, -float64(2*i)/float64(c.Dims))
	}
	switch c.Scaling {
	case ScaleLinear:
		for i := range inv {
			inv[i] /= c.Factor
		}
	case ScaleYaRN:
		low, high := c.yarnRange()
		for i := range inv {
			ramp := math.Min(math.Max((float64(i)-low)/(high-low), 0), 1)
			extrapolate := 1 - ramp
			inv[i] = inv[i]/c.Factor*(1-extrapolate) + inv[i]*extrapolate
		}
	case ScaleLlama3:
		lowWave := float64(c.OrigContext) / c.LowFreqFactor
		highWave := float64(c.OrigContext) / c.HighFreqFactor
		for i, f := range inv {
			wave := 2 * math.Pi / f
			switch {
			case wave < highWave:
			case wave > lowWave:
				inv[i] = f / c.Factor
			default:
				s := (float64(c.OrigContext)/wave - c.LowFreqFactor) / (c.HighFreqFactor - c.LowFreqFactor)
				inv[i] = (1-s)*f/c.Factor + s*f
			}
		}
	}
	return inv, nil
}

// RopeInvFreq records the inverse frequencies F32 [Dims/2] in the graph,
// so no table needs binding: theta^(-2i/n) as exp(i · (-2 ln theta / n)),
// then the scaling as one elementwise blend
// inv · (keep + (1 - keep)/Factor), where keep is 1 for ScaleNone, 0 for
// ScaleLinear, YaRN's ramp over i, and Llama 3's clamped band position
// (L·inv/(2π) - low)/(high - low). A GGUF's rope_freqs factors, where a
// checkpoint has them, divide the result.
func RopeInvFreq[B any](b *poot.Builder[B], c RopeConfig) poot.Traced[B] {
	if err := c.check(); err != nil {
		return fail(b, "rope_inv_freq", "%v", err)
	}
	return scoped(b, "rope_inv_freq", func() poot.Traced[B] {
		half := c.Dims / 2
		i := b.Iota(poot.T(poot.F32, half), 0)
		inv := b.Exp(MulScalar(b, i, -2*math.Log(c.base())/float64(c.Dims)))
		clamp01 := func(x poot.Traced[B]) poot.Traced[B] {
			return b.Min(b.Max(x, b.FullLike(x, 0)), b.FullLike(x, 1))
		}
		switch c.Scaling {
		case ScaleLinear:
			inv = MulScalar(b, inv, 1/c.Factor)
		case ScaleYaRN:
			low, high := c.yarnRange()
			ramp := clamp01(MulScalar(b, AddScalar(b, i, -low), 1/(high-low)))
			// keep = 1 - ramp: inv·(1 + ramp·(1/Factor - 1))
			inv = b.Mul(inv, AddScalar(b, MulScalar(b, ramp, 1/c.Factor-1), 1))
		case ScaleLlama3:
			l := float64(c.OrigContext)
			band := MulScalar(b, inv, l/(2*math.Pi*(c.HighFreqFactor-c.LowFreqFactor)))
			keep := clamp01(AddScalar(b, band, -c.LowFreqFactor/(c.HighFreqFactor-c.LowFreqFactor)))
			// inv·(1/Factor + keep·(1 - 1/Factor))
			inv = b.Mul(inv, AddScalar(b, MulScalar(b, keep, 1-1/c.Factor), 1/c.Factor))
		}
		return inv
	})
}

// Rotary holds the cos and sin tables of one step, F32 [T, n/2] for T
// positions and n rotated channels, already multiplied by the attention
// factor. Compute it once per step (per distinct base) and apply it to every
// layer's queries and keys.
type Rotary[B any] struct {
	Cos, Sin poot.Traced[B]
	Layout   RopeLayout
}

// RopeTables records the angles pos·inv in the graph and their cos and sin.
// pos is the step's I32 positions [T] (the SlotPos slot; for a batch of
// sequences, [R*T] row-major); invFreq is F32 [n/2], from RopeInvFreq or a
// bound constant; attnFactor scales both tables (1 for none; see
// RopeConfig.AttentionFactor).
func RopeTables[B any](b *poot.Builder[B], pos, invFreq poot.Traced[B], attnFactor float64, layout RopeLayout) Rotary[B] {
	var r Rotary[B]
	r.Layout = layout
	b.Scope("rope_tables", func() {
		t, half := b.Dim(pos, 0), b.Dim(invFreq, 0)
		if b.Rank(pos) != 1 || b.Rank(invFreq) != 1 {
			r.Cos = fail(b, "rope_tables", "positions %v and frequencies %v must be vectors", b.Shape(pos), b.Shape(invFreq))
			r.Sin = r.Cos
			return
		}
		p := b.Broadcast(b.Reshape(b.Cast(pos, poot.F32), t, 1), t, half)
		ang := b.Mul(p, b.Broadcast(b.Reshape(invFreq, 1, half), t, half))
		r.Cos, r.Sin = b.Cos(ang), b.Sin(ang)
		if attnFactor != 1 {
			r.Cos, r.Sin = MulScalar(b, r.Cos, attnFactor), MulScalar(b, r.Sin, attnFactor)
		}
	})
	return r
}

// RoPE rotates each head of x [T, H*D] by its row's position: the first n
// channels of every head (n = 2·the tables' width, at most D) are rotated in
// r's layout and the remaining D - n channels pass through unchanged
// (partial rotary). Rows of x correspond to rows of the tables.
func RoPE[B any](b *poot.Builder[B], x poot.Traced[B], heads int, r Rotary[B]) poot.Traced[B] {
	layout := "neox"
	if r.Layout == RopeInterleaved {
		layout = "interleaved"
	}
	return composite(b, "rope", poot.Attrs{attr("heads", heads), attr("layout", layout), attr("dims", 2*b.Dim(r.Cos, -1))}, in(x, r.Cos, r.Sin), func() poot.Traced[B] {
		t, c := b.Dim(x, 0), b.Dim(x, -1)
		half := b.Dim(r.Cos, -1)
		n := 2 * half
		if b.Rank(x) != 2 || heads < 1 || c%heads != 0 || n > c/heads {
			return fail(b, "rope", "x %v with %d heads cannot take %d rotary dims", b.Shape(x), heads, n)
		}
		d := c / heads
		xh := b.Reshape(x, t, heads, d)
		rot := xh
		if n < d {
			rot = b.SliceAxis(xh, 2, 0, n)
		}
		cos := b.Broadcast(b.Reshape(r.Cos, t, 1, half), t, heads, half)
		sin := b.Broadcast(b.Reshape(r.Sin, t, 1, half), t, heads, half)
		var out poot.Traced[B]
		switch r.Layout {
		case RopeNeoX:
			x1, x2 := b.SliceAxis(rot, 2, 0, half), b.SliceAxis(rot, 2, half, n)
			out = b.Concat(2,
				b.Sub(b.Mul(x1, cos), b.Mul(x2, sin)),
				b.Add(b.Mul(x2, cos), b.Mul(x1, sin)))
		case RopeInterleaved:
			pairs := b.Reshape(rot, t, heads, half, 2)
			x1 := b.Reshape(b.SliceAxis(pairs, 3, 0, 1), t, heads, half)
			x2 := b.Reshape(b.SliceAxis(pairs, 3, 1, 2), t, heads, half)
			o1 := b.Sub(b.Mul(x1, cos), b.Mul(x2, sin))
			o2 := b.Add(b.Mul(x2, cos), b.Mul(x1, sin))
			out = b.Reshape(b.Concat(3, b.Reshape(o1, t, heads, half, 1), b.Reshape(o2, t, heads, half, 1)), t, heads, n)
		default:
			return fail(b, "rope", "unknown layout %d", r.Layout)
		}
		if n < d {
			out = b.Concat(2, out, b.SliceAxis(xh, 2, n, d))
		}
		return b.Reshape(out, t, c)
	})
}

// AttnTemperature records Llama 4's attention temperature for each
// position, F32 [T]: log(floor((pos+1)/floorScale) + 1)·attnScale + 1.
// Queries of its no-RoPE layers are multiplied by it (ScaleRows).
func AttnTemperature[B any](b *poot.Builder[B], pos poot.Traced[B], floorScale, attnScale float64) poot.Traced[B] {
	if !(floorScale > 0) {
		return fail(b, "attn_temperature", "floor scale %v must be positive", floorScale)
	}
	return scoped(b, "attn_temperature", func() poot.Traced[B] {
		p := AddScalar(b, b.Cast(pos, poot.F32), 1)
		// Positions are non-negative, so truncation is floor.
		f := b.Cast(b.Cast(b.Div(p, b.FullLike(p, floorScale)), poot.I32), poot.F32)
		return AddScalar(b, MulScalar(b, b.Log(AddScalar(b, f, 1)), attnScale), 1)
	})
}

// ScaleRows multiplies each row of x [T, C] by its own factor s [T].
func ScaleRows[B any](b *poot.Builder[B], x, s poot.Traced[B]) poot.Traced[B] {
	return scoped(b, "scale_rows", func() poot.Traced[B] {
		return b.Mul(x, b.Broadcast(b.Reshape(s, b.Dim(s, 0), 1), dims(b, x)...))
	})
}
