/**
 * Numbers as C and Redis write and read them, exactly: printf's %e, %f and %g (rounded half to even on
 * the double's exact value, as glibc rounds, where JavaScript's toFixed rounds half up), the "%.17g"
 * Redis 7.0 writes doubles with, the shortest text Redis 7.2 writes them with (fpconv_dtoa), and Redis'
 * strict readers of integers and doubles. Shared by the Lua VM (tostring, string.format, redis.call's
 * arguments) and the commands (scores).
 */

/** Redis' version number as its text: 0x070200 -> "7.2.0". */
export function versionText(version: number): string {
  return `${version >> 16}.${(version >> 8) & 0xff}.${version & 0xff}`;
}

/** The first Redis version that writes doubles as their shortest text (fpconv_dtoa) instead of "%.17g". */
export const REDIS_7_2 = 0x070200;

const bits = new Float64Array(1);
const words = new BigUint64Array(bits.buffer);

/** A finite |x| exactly, as `digits` × 10^`exponent`: a double is m × 2^e, that is m × 5^-e × 10^e. */
function exact(x: number): { digits: bigint; exponent: number } {
  bits[0] = Math.abs(x);
  const word = words[0];
  const biased = Number(word >> 52n);
  const fraction = word & ((1n << 52n) - 1n);
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const power = biased === 0 ? -1074 : biased - 1075;
  if (power >= 0) return { digits: mantissa << BigInt(power), exponent: 0 };
  return { digits: mantissa * 5n ** BigInt(-power), exponent: power };
}

/** |x| × 10^`places`, rounded to an integer half to even. */
function scaled(x: number, places: number): bigint {
  const { digits, exponent } = exact(x);
  const shift = exponent + places;
  if (shift >= 0) return digits * 10n ** BigInt(shift);
  const unit = 10n ** BigInt(-shift);
  const quotient = digits / unit;
  const twice = (digits % unit) * 2n;
  return twice > unit || (twice === unit && quotient % 2n === 1n) ? quotient + 1n : quotient;
}

/** The power of ten of |x|'s first digit (x finite, not 0). */
function decimalExponent(x: number): number {
  const { digits, exponent } = exact(x);
  return digits.toString().length - 1 + exponent;
}

/** Whether the sign bit is set: C writes -0 and a negative NaN (what 0/0 gives on x86) with a "-". */
export function signBit(x: number): boolean {
  bits[0] = x;
  return words[0] >> 63n === 1n;
}

/** "%.<precision>f" of |x| (finite). `alt`: the "#" flag, a point even without decimals. */
export function fixed(x: number, precision: number, alt = false): string {
  const abs = Math.abs(x);
  let text: string;
  // toFixed is exact on integers below 1e21, the usual case (fences, clocks, scores).
  if (Number.isInteger(abs) && abs < 1e21) text = abs.toFixed(precision);
  else {
    const digits = scaled(abs, precision)
      .toString()
      .padStart(precision + 1, '0');
    text = precision > 0 ? `${digits.slice(0, -precision)}.${digits.slice(-precision)}` : digits;
  }
  return alt && precision === 0 ? `${text}.` : text;
}

/** "%.<precision>e" of |x| (finite). */
export function exponential(x: number, precision: number, alt = false): string {
  const abs = Math.abs(x);
  let power = 0;
  let digits = '0'.repeat(precision + 1);
  if (abs !== 0) {
    power = decimalExponent(abs);
    let rounded = scaled(abs, precision - power);
    // Rounded up to the next power of ten (9.99 -> 10.0): one digit more, and the exponent follows.
    if (rounded === 10n ** BigInt(precision + 1)) {
      power += 1;
      rounded /= 10n;
    }
    digits = rounded.toString();
  }
  const point = precision > 0 || alt ? '.' : '';
  const sign = power < 0 ? '-' : '+';
  return `${digits[0]}${point}${digits.slice(1)}e${sign}${String(Math.abs(power)).padStart(2, '0')}`;
}

/** "%.<precision>g" of |x| (finite): %e or %f by the exponent, trailing zeros dropped unless `alt`. */
export function general(x: number, precision: number, alt = false): string {
  const significant = precision === 0 ? 1 : precision;
  const abs = Math.abs(x);
  let power = 0;
  if (abs !== 0) {
    power = decimalExponent(abs);
    if (scaled(abs, significant - 1 - power) === 10n ** BigInt(significant)) power += 1;
  }
  const text =
    power < significant && power >= -4
      ? fixed(abs, significant - 1 - power, alt)
      : exponential(abs, significant - 1, alt);
  if (alt) return text;
  const e = text.indexOf('e');
  const mantissa = e < 0 ? text : text.slice(0, e);
  const trimmed = mantissa.includes('.') ? mantissa.replace(/\.?0+$/, '') : mantissa;
  return e < 0 ? trimmed : trimmed + text.slice(e);
}

/** C's text for infinities and NaN ("inf", "-nan"), or undefined for a finite number. */
function special(x: number): string | undefined {
  if (Number.isNaN(x)) return signBit(x) ? '-nan' : 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  return undefined;
}

/** printf("%.<precision>g", x), signed as C signs it. */
export function cGeneral(x: number, precision: number): string {
  return special(x) ?? (signBit(x) ? '-' : '') + general(x, precision);
}

/** Lua 5.1's tostring of a number ("%.14g"): 3 for 3.0, 1e+15 for 10^15, 1.7e+15 for a µs clock. */
export function luaNumberText(x: number): string {
  // Integers below 10^14 have at most 14 digits: %.14g writes them as they are.
  if (Number.isInteger(x) && Math.abs(x) < 1e14 && !Object.is(x, -0)) return String(x);
  return cGeneral(x, 14);
}

/** fpconv_dtoa's layout of the shortest digits of a finite, non-zero |x| (Redis 7.2's doubles). */
function shortest(abs: number): string {
  const [mantissa, power] = abs.toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const count = digits.length;
  const k = Number(power) - (count - 1);
  let e = Math.abs(k + count - 1);
  if (k >= 0 && e < count + 7) return digits + '0'.repeat(k);
  if (k < 0 && (k > -7 || e < 4)) {
    const offset = count + k;
    return offset <= 0
      ? `0.${'0'.repeat(-offset)}${digits}`
      : `${digits.slice(0, offset)}.${digits.slice(offset)}`;
  }
  let text = digits[0] + (count > 1 ? `.${digits.slice(1, 18)}` : '');
  text += k + count - 1 < 0 ? 'e-' : 'e+';
  if (e > 99) {
    text += Math.floor(e / 100);
    e %= 100;
    text += String(e).padStart(2, '0');
  } else text += e;
  return text;
}

/** A double in a reply (ZSCORE, WITHSCORES), as this version of Redis writes it. */
export function redisDoubleText(x: number, version: number): string {
  if (version < REDIS_7_2) return cGeneral(x, 17);
  const sign = signBit(x) ? '-' : '';
  if (Number.isNaN(x)) return `${sign}nan`;
  if (!Number.isFinite(x)) return `${sign}inf`;
  return x === 0 ? `${sign}0` : sign + shortest(Math.abs(x));
}

/**
 * A Lua number passed to redis.call: "%.17g" before Redis 7.2; from 7.2 an integer (up to 2^62) as its
 * digits, anything else as its shortest text. Never Lua's own "%.14g", which would lose digits.
 */
export function redisArgumentText(x: number, version: number): string {
  if (version < REDIS_7_2) return cGeneral(x, 17);
  if (Number.isInteger(x) && Math.abs(x) <= 2 ** 62) return BigInt(x).toString();
  return redisDoubleText(x, version);
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Redis' reading of a 64-bit integer (string2ll): digits, an optional "-", no spaces, "+" or leading zeros. */
export function parseRedisInteger(text: string): bigint | undefined {
  if (!/^(0|-?[1-9][0-9]{0,19})$/.test(text)) return undefined;
  const value = BigInt(text);
  return value < INT64_MIN || value > INT64_MAX ? undefined : value;
}

/** Whether `value` fits a signed 64-bit integer. */
export function fitsInt64(value: bigint): boolean {
  return value >= INT64_MIN && value <= INT64_MAX;
}

/**
 * Redis' reading of a double (strtod, strict): decimal or "inf"/"infinity", signed; no spaces, no NaN,
 * no overflow to infinity or underflow to zero. Hexadecimal floats, which strtod also reads, are refused.
 */
export function parseRedisDouble(text: string): number | undefined {
  if (/^[+-]?inf(inity)?$/i.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value)) return undefined;
  if (value === 0 && /[1-9]/.test(text.replace(/[eE].*$/, ''))) return undefined;
  return value;
}
