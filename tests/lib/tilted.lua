-- tests/lib/tilted.lua — crystals that fill tilted boxes exactly, for the triclinic tests
-- (tests/gpu/hard.lua, tests/validation/hard_triclinic.lua):
--   tilted.hex(nx, rows, shift, phi): nx x rows hexagonal disks at packing fraction phi in a
--     box whose second lattice vector is shifted by `shift` spacings (a whole number for an even
--     number of rows, a half-integer for an odd one); returns positions (N x 2) and the box;
--   tilted.fcc(nx, rows, layers, shift, phi): fcc spheres as `layers` close-packed layers ABC
--     (a multiple of 3) of nx x rows, the rows' box tilted by `shift` spacings.
local carlo = require "carlo"
local M = {}

function M.hex(nx, rows, shift, phi)
  local a = math.sqrt(math.pi / 4 / phi * 2 / math.sqrt(3))
  local h = a * math.sqrt(3) / 2
  local Lx, Ly = nx * a, rows * h
  local x = carlo.array("f64", { shape = { nx * rows, 2 } })
  for j = 0, rows - 1 do
    for i = 0, nx - 1 do
      x[2 * (j * nx + i) + 1] = (i + 0.5 * j) * a - 0.5 * Lx
      x[2 * (j * nx + i) + 2] = (j + 0.5) * h - 0.5 * Ly
    end
  end
  return x, { Lx, Ly, xy = shift * a / Ly }
end

function M.fcc(nx, rows, layers, shift, phi)
  local a = (math.pi / 6 / phi * math.sqrt(2)) ^ (1 / 3) -- nearest-neighbour distance
  local h, c = a * math.sqrt(3) / 2, a * math.sqrt(2 / 3)
  local Lx, Ly, Lz = nx * a, rows * h, layers * c
  local x = carlo.array("f64", { shape = { nx * rows * layers, 3 } })
  local k = 0
  for l = 0, layers - 1 do
    local ox, oy = (l % 3) * 0.5 * a, (l % 3) * a / (2 * math.sqrt(3))
    for j = 0, rows - 1 do
      for i = 0, nx - 1 do
        x[k + 1] = (i + 0.5 * j) * a + ox - 0.5 * Lx
        x[k + 2] = (j + 0.25) * h + oy - 0.5 * Ly
        x[k + 3] = (l + 0.5) * c - 0.5 * Lz
        k = k + 3
      end
    end
  end
  return x, { Lx, Ly, Lz, shift * a / Ly, 0, 0 }
end

return M
