"""Prototype (not used by the package): the ln(1 - e**-delta) kernel of
exactdp.core.log1mexp as one numba loop over the values, to measure what compiling it
would save.  Same method, same tables, same floors (products here are complete, so a
value may differ from the numpy kernel's by an ulp at W bits; both are within the bound).

    pip install numba
    python benchmarks/proto_numba_log1mexp.py            # 200,000 values, F = 124, W = 120

Prints CPU seconds per million values for both kernels, the compile time, and the largest
difference between them in ulps at F bits.
"""

from __future__ import annotations

import random
import sys
import time

import numpy as np

B = 30
MASK = (1 << B) - 1


def build(numba):
    njit = numba.njit(cache=False, nogil=True)

    @njit
    def norm(x, n):
        for j in range(n - 1):
            c = x[j] >> B
            x[j] &= MASK
            x[j + 1] += c

    @njit
    def mulfull(x, nx, y, ny, out):
        for c in range(nx + ny + 1):
            out[c] = 0
        for i in range(nx):
            for j in range(ny):
                out[i + j] += x[i] * y[j]
        norm(out, nx + ny + 1)  # a column adds at most min(nx, ny) <= 6 products below 2**60
        return nx + ny + 1

    @njit
    def shr(x, n, s, out, nout):
        # floor(x / 2**s) (normalized x, n limbs, s >= 0) into nout limbs (value fits)
        q = s // B
        r = s - q * B
        for j in range(nout):
            k = j + q
            if k < n - 1:
                lo = x[k] >> r
                hi = (x[k + 1] << (B - r)) & MASK if r else 0
                out[j] = lo | hi
            elif k == n - 1:
                out[j] = x[k] >> r
            else:
                out[j] = -1 if x[n - 1] < 0 else 0
        # the value fits nout limbs (the caller's values: P ~ 2**W, T small): a limb cut from a
        # negative value's sign extension is folded back into a signed top below
        norm(out, nout)
        if nout > 0 and n - 1 - q >= nout:  # top limbs beyond nout: value fits, carry the sign
            out[nout - 1] = out[nout - 1] - (1 << B) if (x[n - 1] < 0 and out[nout - 1] >= (1 << (B - 1))) else out[nout - 1]

    @njit
    def kernel(D, F, W, Lw, FIRST, J, stages, first, tables, log2s, coef, cut_bits, out_limbs, ok, Y):
        n = D.shape[1]
        L = D.shape[0]
        nn = Lw + 1
        z = np.zeros(12, np.int64)
        P1 = np.zeros(12, np.int64)
        M = np.zeros(12, np.int64)
        m2 = np.zeros(2, np.int64)
        tmp = np.zeros(24, np.int64)
        tmp2 = np.zeros(24, np.int64)
        P = np.zeros(12, np.int64)
        acc = np.zeros(12, np.int64)
        T = np.zeros(12, np.int64)
        u = np.zeros(12, np.int64)
        q = np.zeros(12, np.int64)
        dw = np.zeros(12, np.int64)
        S = stages.shape[0]
        sumb = 0
        for b in stages:
            sumb += b
        Lz = (F + FIRST + 1) // B + 1
        for i in range(n):
            ok[i] = False
            # domain: floor(D 2**(31-F)) in [4, 2**(31-cut))
            qq = (F - 31) // B
            rr = (F - 31) - qq * B
            bad = D[L - 1, i] < 0
            for j in range(qq + 2, L):
                if D[j, i] != 0:
                    bad = True
            if bad:
                continue
            top = D[qq, i] >> rr
            if qq + 1 < L:
                top += D[qq + 1, i] << (B - rr)
            if top < 4 or top >= (1 << (31 - cut_bits)):
                continue
            bl = 0
            tt = top
            while tt:
                bl += 1
                tt >>= 1
            s = 32 - bl
            for j in range(Lz):
                z[j] = (D[j, i] << s) if j < L else 0
            norm(z, Lz)
            zf = 0.0
            for j in range(Lz - 1, max(Lz - 4, -1), -1):
                zf += z[j] * 2.0 ** (B * j - F)
            r = int(np.rint((1 << FIRST) / zf))
            r = min(max(r, 1 << (FIRST - 1)), 1 << FIRST)
            for j in range(nn):
                acc[j] = first[j, r - (1 << (FIRST - 1))] + log2s[j, s]
            for j in range(Lz):
                P1[j] = z[j] * r
            norm(P1, Lz)
            # t from P1 - 2**(F+11)
            t = 0.0
            qb = (F + FIRST) // B
            for j in range(Lz - 1, -1, -1):
                v = P1[j] - ((1 << ((F + FIRST) - qb * B)) if j == qb else 0)
                t += v * 2.0 ** (B * j - F - FIRST)
            nM = 1
            M[0] = 1
            for k in range(S):
                b = stages[k]
                jj = np.rint(t / (1 + t) * 2.0 ** b)
                jj = min(max(jj, -J), J)
                t = t - jj * 2.0 ** -b * (1 + t)
                j = int(jj)
                for l in range(nn):
                    acc[l] += tables[k, l, j + J]
                m = (1 << b) - j
                m2[0] = m & MASK
                m2[1] = m >> B
                nt = mulfull(M, nM, m2, 2, tmp)
                nM = nM + 2
                for l in range(nM):
                    M[l] = tmp[l]
            nt = mulfull(P1, Lz, M, nM, tmp)
            shr(tmp, nt, F + FIRST + sumb - W, P, nn)
            # T = P - 2**W
            for j in range(nn):
                T[j] = P[j]
            T[Lw] -= 1
            # check -2**(W - b_last) <= T < 2**(W - b_last)
            bits = W - stages[S - 1]
            for j in range(nn):
                tmp[j] = T[j]
            tmp[bits // B] += 1 << (bits - (bits // B) * B)
            norm(tmp, nn)
            shr(tmp, nn, bits + 1, tmp2, nn)
            good = True
            for j in range(nn):
                if tmp2[j] != 0:
                    good = False
            if not good:
                continue
            # ln(1 + t) = t - t**2/2
            for j in range(nn):
                acc[j] += T[j]
            nt = mulfull(T, nn, T, nn, tmp)
            shr(tmp, nt, W + 1, tmp2, nn)
            for j in range(nn):
                acc[j] -= tmp2[j]
            # h
            if W <= F:
                for j in range(L):
                    z[j] = D[j, i]
                shr(z, L, F - W, dw, Lw)
            else:
                for j in range(Lw):
                    dw[j] = 0
                # exact left shift (not needed at F >= W in this prototype)
            shr(dw, Lw, 1, tmp2, nn)
            for j in range(nn):
                acc[j] -= tmp2[j]
            nt = mulfull(dw, Lw, dw, Lw, tmp)
            shr(tmp, nt, W, u, Lw)
            nc = coef.shape[0]
            for j in range(Lw):
                q[j] = coef[nc - 1, j]
            for c in range(nc - 2, -1, -1):
                nt = mulfull(u, Lw, q, Lw, tmp)
                shr(tmp, nt, W, q, Lw)
                for j in range(Lw):
                    q[j] += coef[c, j]
                norm(q, Lw)
            nt = mulfull(u, Lw, q, Lw, tmp)
            shr(tmp, nt, W, tmp2, nn)
            for j in range(nn):
                acc[j] += tmp2[j]
            norm(acc, nn)
            # to F bits (W <= F: exact left shift)
            sh = F - W
            for j in range(out_limbs):
                tmp[j] = 0
            qs = sh // B
            rs = sh - qs * B
            for j in range(nn):
                if j + qs < out_limbs:
                    tmp[j + qs] += acc[j] << rs
            norm(tmp, out_limbs)
            for j in range(out_limbs):
                Y[j, i] = tmp[j]
            ok[i] = True

    return kernel


def main() -> None:
    import numba

    from exactdp.core.log1mexp import CUT_BITS, Log1mExpKernel, _FIRST, _J
    from exactdp.core.log_table import from_limbs, to_limbs

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    F, W = 124, 120
    K = Log1mExpKernel(F, W)
    rng = random.Random(1)
    Ds = [int(2 ** rng.uniform(F - 17, F - 9)) for _ in range(n)]
    X = to_limbs(Ds, 5)
    t = time.process_time()
    kern = build(numba)
    tables = np.stack(K.tables)
    coef = np.concatenate(K.coef, axis=1).T.copy()
    ok = np.zeros(n, dtype=np.bool_)
    Y = np.zeros((5, n), dtype=np.int64)
    args = (F, W, K.Lw, _FIRST, _J, np.array(K.stages, dtype=np.int64), K.first, tables, K.log2s, coef, CUT_BITS, 5)
    kern(X[:, :10].copy(), *args, ok[:10].copy(), Y[:, :10].copy())  # compiles (C-contiguous arrays)
    compile_s = time.process_time() - t
    t = time.process_time()
    kern(X, *args, ok, Y)
    nb_s = time.process_time() - t
    t = time.process_time()
    ok2, Y2 = K(X, 5)
    np_s = time.process_time() - t
    assert ok.all() and ok2.all()
    diff = max(abs(from_limbs(Y, i) - from_limbs(Y2, i)) for i in range(0, n, max(1, n // 2000)))
    print(f"values {n}: numpy {np_s / n * 1e6:.3f} CPU s per million, numba {nb_s / n * 1e6:.3f} "
          f"(compile {compile_s:.1f} s); largest difference {diff} ulps (bound {K.error})")


if __name__ == "__main__":
    main()
