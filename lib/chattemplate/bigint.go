package chattemplate

import (
	"math"
	"math/big"
	"strconv"
)

// Python ints have arbitrary precision. Values that fit int64 stay int64
// (the fast path every chat template takes); literals, JSON numbers and
// results beyond it become bigInt, and results that fit again come back
// to int64, so one int never has two representations.

// maxBigDigits is Python's default limit on int/str conversion (3.11 and
// later; sys.set_int_max_str_digits). Python fails when such an int is
// printed or parsed; here it fails when the int is made, which keeps
// hostile templates from growing numbers without bound.
const maxBigDigits = 4300

// newBigInt wraps n, which must be outside int64.
func newBigInt(n *big.Int) (value, error) {
	text := n.String()
	digits := len(text)
	if n.Sign() < 0 {
		digits--
	}
	if digits > maxBigDigits {
		return nil, valueError("Exceeds the limit (%d digits) for integer string conversion", maxBigDigits)
	}
	f, _ := new(big.Float).SetInt(n).Float64()
	return bigInt{text: text, f: f}, nil
}

// normBig returns n as int64 when it fits, else as bigInt.
func normBig(n *big.Int) (value, error) {
	if n.IsInt64() {
		return n.Int64(), nil
	}
	return newBigInt(n)
}

// parseBigLiteral reads an integer literal too large for int64.
func parseBigLiteral(text string) (value, error) {
	n, ok := new(big.Int).SetString(text, 10)
	if !ok {
		return nil, valueError("invalid literal for int() with base 10: %s", strconv.Quote(text))
	}
	return normBig(n)
}

func (b bigInt) big() *big.Int {
	n, _ := new(big.Int).SetString(b.text, 10)
	return n
}

// toBig returns an int operand (bool, int64, bigInt) as a big.Int.
func toBig(v value) (*big.Int, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return big.NewInt(1), true
		}
		return new(big.Int), true
	case int64:
		return big.NewInt(x), true
	case bigInt:
		return x.big(), true
	}
	return nil, false
}

// bigToFloat is Python's float(int), which fails rather than give inf.
func bigToFloat(b bigInt) (float64, error) {
	if math.IsInf(b.f, 0) {
		return 0, &RenderError{Kind: "OverflowError", Msg: "int too large to convert to float"}
	}
	return b.f, nil
}

// bigArith is Python's int arithmetic on operands where one is a bigInt
// or where the int64 result overflowed.
func bigArith(op string, a, b *big.Int) (value, error) {
	out := new(big.Int)
	switch op {
	case "+":
		out.Add(a, b)
	case "-":
		out.Sub(a, b)
	case "*":
		if a.BitLen()+b.BitLen() > 4*maxBigDigits {
			return nil, valueError("Exceeds the limit (%d digits) for integer string conversion", maxBigDigits)
		}
		out.Mul(a, b)
	case "/":
		if b.Sign() == 0 {
			return nil, &RenderError{Kind: "ZeroDivisionError", Msg: "division by zero"}
		}
		q, _ := new(big.Rat).SetFrac(a, b).Float64()
		if math.IsInf(q, 0) {
			return nil, &RenderError{Kind: "OverflowError", Msg: "integer division result too large for a float"}
		}
		return q, nil
	case "//", "%":
		if b.Sign() == 0 {
			return nil, &RenderError{Kind: "ZeroDivisionError", Msg: "integer division or modulo by zero"}
		}
		// Python floors; big.Int's DivMod is Euclidean (remainder >= 0).
		q, m := new(big.Int).DivMod(a, b, new(big.Int))
		if m.Sign() != 0 && b.Sign() < 0 {
			q.Add(q, big.NewInt(1))
			m.Add(m, b)
		}
		if op == "//" {
			out = q
		} else {
			out = m
		}
	case "**":
		if b.Sign() < 0 {
			fa, _ := new(big.Float).SetInt(a).Float64()
			fb, _ := new(big.Float).SetInt(b).Float64()
			return floatPow(fa, fb)
		}
		if a.CmpAbs(big.NewInt(1)) > 0 && (!b.IsInt64() || int64(a.BitLen())*b.Int64() > 4*maxBigDigits) {
			return nil, valueError("Exceeds the limit (%d digits) for integer string conversion", maxBigDigits)
		}
		out.Exp(a, b, nil)
	default:
		return nil, typeError("unsupported operator %s", op)
	}
	return normBig(out)
}

// compareBig orders two numbers when one is a bigInt; ok is false when
// neither is. Against a float the comparison is exact, as in Python.
func compareBig(a, b value) (int, bool) {
	_, aBig := a.(bigInt)
	_, bBig := b.(bigInt)
	if !aBig && !bBig {
		return 0, false
	}
	ab, aInt := toBig(a)
	bb, bInt := toBig(b)
	if aInt && bInt {
		return ab.Cmp(bb), true
	}
	// One side is a float: compare exactly unless it is inf or nan.
	af, bf := new(big.Float), new(big.Float)
	for _, p := range []struct {
		v   value
		f   *big.Float
		big *big.Int
	}{{a, af, ab}, {b, bf, bb}} {
		if p.big != nil {
			p.f.SetInt(p.big)
			continue
		}
		f := p.v.(float64)
		if math.IsNaN(f) {
			return 2, true // unequal and unordered
		}
		p.f.SetFloat64(f)
	}
	return af.Cmp(bf), true
}
