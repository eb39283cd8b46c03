;; The body of a long JSON string, scanned 16 bytes per step with WebAssembly SIMD: the same grammar as
;; scanString in message-scan.ts (a quote ends the string; a backslash starts \" \\ \/ \b \f \n \r \t or
;; \uXXXX; a byte below 0x20 is invalid), over a window of the message that JavaScript copied to memory 0.
;; Assembled by `npm run build:wasm` into string-scan-wasm.ts (committed; a test checks it matches).
(module
  ;; Pages 0-3: the window (WINDOW_BYTES in string-scan.ts). Page 4: the byte-class tables below.
  (memory (export "memory") 5)
  ;; 262144: for each byte after a backslash, 1 for a one-character escape, 2 for `u`.
  (data (i32.const 262178) "\01")      ;; "
  (data (i32.const 262191) "\01")      ;; /
  (data (i32.const 262236) "\01")      ;; \
  (data (i32.const 262242) "\01")      ;; b
  (data (i32.const 262246) "\01")      ;; f
  (data (i32.const 262254) "\01")      ;; n
  (data (i32.const 262258) "\01")      ;; r
  (data (i32.const 262260) "\01\02")   ;; t u
  ;; 262400: 1 for each hexadecimal digit.
  (data (i32.const 262448) "\01\01\01\01\01\01\01\01\01\01")  ;; 0-9
  (data (i32.const 262465) "\01\01\01\01\01\01")              ;; A-F
  (data (i32.const 262497) "\01\01\01\01\01\01")              ;; a-f

  ;; Scans from `from` (inside a string, past its opening quote) to `end`, the end of the window.
  ;; Returns the index past the closing quote; -1 when the string is invalid; or -2 - i when the window
  ;; ends first, i being where to go on (the window's end, or an escape the window cuts).
  (func (export "scanStringBody") (param $from i32) (param $end i32) (result i32)
    (local $i i32) (local $bits i32) (local $c i32) (local $class i32)
    (local.set $i (local.get $from))
    (block $done
      (loop $next
        ;; 16 bytes at a time while none is a quote, a backslash or below 0x20.
        (block $stop
          (loop $run
            (br_if $stop (i32.gt_u (i32.add (local.get $i) (i32.const 16)) (local.get $end)))
            (local.set $bits
              (i8x16.bitmask
                (v128.or
                  (v128.or
                    (i8x16.eq (v128.load (local.get $i)) (i8x16.splat (i32.const 0x22)))
                    (i8x16.eq (v128.load (local.get $i)) (i8x16.splat (i32.const 0x5c))))
                  (i8x16.lt_u (v128.load (local.get $i)) (i8x16.splat (i32.const 0x20))))))
            (if (local.get $bits)
              (then
                (local.set $i (i32.add (local.get $i) (i32.ctz (local.get $bits))))
                (br $stop)))
            (local.set $i (i32.add (local.get $i) (i32.const 16)))
            (br $run)))
        ;; Fewer than 16 bytes left, or a stop found: byte by byte to the stop.
        (block $found
          (loop $tail
            (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
            (local.set $c (i32.load8_u (local.get $i)))
            (br_if $found (i32.eq (local.get $c) (i32.const 0x22)))
            (br_if $found (i32.eq (local.get $c) (i32.const 0x5c)))
            (br_if $found (i32.lt_u (local.get $c) (i32.const 0x20)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $tail)))
        (if (i32.eq (local.get $c) (i32.const 0x22))
          (then (return (i32.add (local.get $i) (i32.const 1)))))
        (if (i32.lt_u (local.get $c) (i32.const 0x20))
          (then (return (i32.const -1))))
        ;; A backslash: its escape must lie wholly in the window (for \u, with a byte after it, as in scanString),
        ;; else go on from it in the next window.
        (br_if $done (i32.ge_u (i32.add (local.get $i) (i32.const 1)) (local.get $end)))
        (local.set $class (i32.load8_u offset=262144 (i32.load8_u offset=1 (local.get $i))))
        (if (i32.eq (local.get $class) (i32.const 1))
          (then
            (local.set $i (i32.add (local.get $i) (i32.const 2)))
            (br $next)))
        (if (i32.eqz (local.get $class))
          (then (return (i32.const -1))))
        (br_if $done (i32.ge_u (i32.add (local.get $i) (i32.const 5)) (local.get $end)))
        (if (i32.eqz
              (i32.and
                (i32.and
                  (i32.load8_u offset=262400 (i32.load8_u offset=2 (local.get $i)))
                  (i32.load8_u offset=262400 (i32.load8_u offset=3 (local.get $i))))
                (i32.and
                  (i32.load8_u offset=262400 (i32.load8_u offset=4 (local.get $i)))
                  (i32.load8_u offset=262400 (i32.load8_u offset=5 (local.get $i))))))
          (then (return (i32.const -1))))
        (local.set $i (i32.add (local.get $i) (i32.const 6)))
        (br $next)))
    (i32.sub (i32.const -2) (local.get $i))))
