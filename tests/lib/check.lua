-- check.lua — the Lua tests' assertions. Every check prints one line the runner counts:
-- PASS name / FAIL name: why / SKIP name: why. Names say tier, model and case.
local carlo = require "carlo"
local M = {}

M.tmp = os.getenv("CARLO_TEST_TMP") or "/tmp"

function M.pass(name) print("PASS " .. name) end
function M.fail(name, why) print("FAIL " .. name .. ": " .. tostring(why)) end
function M.skip(name, why) print("SKIP " .. name .. ": " .. tostring(why)) end

function M.ok(name, cond, why)
  if cond then M.pass(name) else M.fail(name, why or "condition false") end
  return cond
end

function M.eq(name, got, want)
  return M.ok(name, got == want, ("got %s, want %s"):format(tostring(got), tostring(want)))
end

-- |x - ref| <= k * err: an estimate against a reference within k error bars.
function M.within(name, x, ref, err, k)
  k = k or 3
  local ok = math.abs(x - ref) <= k * err and err == err
  return M.ok(name, ok, ("%.8g vs %.8g: %.2f error bars (err %.3g, allowed %g)")
    :format(x, ref, err > 0 and math.abs(x - ref) / err or math.huge, err, k))
end

-- Two estimates with their own errors agree within k combined error bars.
function M.agree(name, a, ea, b, eb, k)
  return M.within(name, a, b, math.sqrt(ea * ea + eb * eb), k)
end

-- fn must raise an error whose message matches every pattern (plain find).
function M.raises(name, fn, ...)
  local ok, err = pcall(fn)
  if ok then return M.fail(name, "no error raised") end
  err = tostring(err)
  for _, p in ipairs({ ... }) do
    if not err:find(p, 1, true) then return M.fail(name, ("message %q lacks %q"):format(err, p)) end
  end
  return M.pass(name)
end

-- The whole file at path, or nil when it cannot be opened.
function M.slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- Ctrl-C in a child process: the script text run by $CARLO --quiet, one SIGINT after `after`
-- seconds (SIGKILL 20 s later, should it not end); foreground: the SIGINT to the child alone, as
-- a terminal sends it. Returns { ok =, how =, code = } (os.execute's), took (seconds) and said
-- (its stderr); nil when $CARLO or timeout(1) is missing. tag names its files in M.tmp.
function M.interrupt(tag, text, after, foreground)
  local carlo_cmd = os.getenv("CARLO")
  if not carlo_cmd or not os.execute("command -v timeout >/dev/null 2>&1") then return nil end
  local script, err = M.tmp .. "/" .. tag .. ".lua", M.tmp .. "/" .. tag .. ".err"
  local f = assert(io.open(script, "w"))
  f:write(text)
  f:close()
  local t0 = carlo.clock()
  local ok, how, code = os.execute(("timeout%s --preserve-status -k 20 -s INT %s %s --quiet %s >/dev/null 2>%s")
    :format(foreground and " --foreground" or "", after, carlo_cmd, script, err))
  local r = { ok = ok, how = how, code = code, took = carlo.clock() - t0, said = M.slurp(err) or "" }
  r.why = ("exit %s %s after %.1f s: %s"):format(tostring(how), tostring(code), r.took, r.said)
  return r
end

-- Under mpirun: rank 0 writes lines to path, one a line (the MPI tests' files, compared across
-- rank counts by their .sh); the other ranks write nothing.
function M.rank0_write(path, lines)
  if carlo.mpi.rank ~= 0 then return end
  local f = assert(io.open(path, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
end

-- The MPI split tests' common checks of a split system a against the same system whole, b;
-- check(name, cond, why) is the script's own (its names carry the group and rank count).
-- The pressure's mean and error bar of a sample (args: sys:sample's) are the whole one's.
function M.split_sample(check, name, a, b, args)
  local qa, qb = a:sample(args), b:sample(args)
  check(name, qa.P.mean == qb.P.mean and qa.P.err == qb.P.err,
    ("P %.17g +- %.3g vs %.17g +- %.3g"):format(qa.P.mean, qa.P.err, qb.P.mean, qb.P.err))
end

-- Both carried on `sweeps` sweeps to step `step`: every particle of a still there once, no
-- overlap, and the same chain (same_chain(name, a, b), the script's comparison).
function M.split_carry_on(check, same_chain, name, a, b, sweeps, step)
  a:run{ sweeps = sweeps }
  b:run{ sweeps = sweeps }
  local ok, why = a:verify() -- N particles, each in its cell once, no overlap
  check(name .. "_verify", ok and a.step == step, tostring(why))
  local nover = a:overlaps()
  check(name .. "_no_overlap", nover == 0, ("%d overlapping pairs"):format(nover))
  same_chain(name, a, b)
end

-- Both compressed to phi (quiet) and carried on `sweeps` sweeps: a valid at phi (within tol),
-- and the same chain (same_chain(name, a, b), the script's comparison).
function M.split_compress(check, same_chain, name, a, b, phi, tol, sweeps)
  a:compress{ phi = phi, quiet = true }
  b:compress{ phi = phi, quiet = true }
  check(name .. "_valid", a:verify() and math.abs(a.phi - phi) < tol, ("phi %.9f"):format(a.phi))
  a:run{ sweeps = sweeps }
  b:run{ sweeps = sweeps }
  same_chain(name, a, b)
end

-- A copy of table t with the keys of extra set over it (constructor arguments varied per case).
function M.with(t, extra)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  for k, v in pairs(extra) do c[k] = v end
  return c
end

function M.has_gpu()
  return #carlo.devices().gpus > 0
end

-- For tests/gpu: SKIP without a GPU (a FAIL when the runner requires one).
function M.gpu_or_skip(name)
  if M.has_gpu() then return true end
  if os.getenv("CARLO_REQUIRE_GPU") == "1" then
    M.fail(name, "no GPU (make test-gpu needs one)")
  else
    M.skip(name, "no GPU")
  end
  return false
end

-- For scripts under mpirun: a check function that every rank calls and that passes when the
-- condition holds on all of them (rank 0 prints its line), named prefix .. name .. suffix.
function M.on_all_ranks(prefix, suffix)
  return function(name, cond, why)
    local bad = carlo.mpi.sum(cond and 0 or 1)
    return M.ok(prefix .. name .. suffix, bad == 0,
      cond and ("fails on %d rank(s), not on rank 0"):format(bad) or why)
  end
end

-- FNV-1a (64 bits, Lua's integers wrap) over the exact bits of every coordinate of a particle
-- system's snapshot, in tag order: the same string for the same configuration bit for bit.
function M.position_fingerprint(sys)
  local h = -3750763034362895579 -- 0xcbf29ce484222325
  for _, row in ipairs(sys:snapshot().position:totable()) do
    for _, x in ipairs(row) do
      local s = ("%a"):format(x)
      for i = 1, #s do h = (h ~ s:byte(i)) * 1099511628211 end
    end
  end
  return ("%016x"):format(h)
end

return M
