/* png.h — write 8-bit RGB PNG images (zlib-compressed), and the colour maps carlo uses
 * for lattices: distinct colours for discrete states, a perceptual ramp for heights. */
#ifndef CARLO_PNG_H
#define CARLO_PNG_H

#include <stddef.h>
#include <stdint.h>

/* rgb holds height rows of width pixels, 3 bytes each. Returns 0, or -1 with the message set. */
int carlo_png_write(const char *path, int width, int height, const uint8_t *rgb);

/* Colour of discrete state v of q (state 0 is a fixed dark blue; the rest are spread
 * around the hue circle by the golden angle, so neighbouring states look different). */
void carlo_state_color(int v, int q, uint8_t rgb[3]);

/* A ramp for x in [0, 1] (dark blue, through teal and green, to yellow). */
void carlo_ramp_color(double x, uint8_t rgb[3]);

/* A lattice of integer states (u8, rows x cols) as an image, each site scale x scale pixels. */
int carlo_png_states(const char *path, const uint8_t *states, int rows, int cols, int q, int scale);

#endif
