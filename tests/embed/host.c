/* unit/embed — a host program that embeds the runtime through carlo.h alone: it builds a
 * Potts system, runs sweeps, and reads the energy back in C. */
#include <math.h>
#include <stdio.h>

#include "carlo.h"

int main(void)
{
    carlo_runtime *rt = carlo_open();
    if (!rt) {
        printf("FAIL unit/embed/open: carlo_open returned NULL\n");
        return 1;
    }
    printf("PASS unit/embed/open\n");
    int bad = carlo_dostring(rt,
                             "sys = carlo.potts{ L = 32, q = 3, T = 0.5, seed = 9, start = 'ordered', "
                             "device = 'cpu' }\nsys:run{ sweeps = 20 }",
                             "=host");
    if (bad)
        printf("FAIL unit/embed/run: %s\n", carlo_error(rt));
    else
        printf("PASS unit/embed/run\n");
    double e = 0, step = 0;
    if (carlo_eval_number(rt, "sys:observe().e", &e) || carlo_eval_number(rt, "sys.step", &step))
        printf("FAIL unit/embed/energy: %s\n", carlo_error(rt));
    else if (e < -2.0 || e > -1.0 || step != 20)
        printf("FAIL unit/embed/energy: e = %g at step %g, expected an ordered-phase energy in "
               "[-2, -1] at step 20\n", e, step);
    else
        printf("PASS unit/embed/energy\n");
    /* a Lua error comes back as a message, not a crash */
    if (carlo_dostring(rt, "carlo.potts{ L = 3, q = 3, T = 1 }", "=host") &&
        carlo_error(rt)[0] != 0)
        printf("PASS unit/embed/error\n");
    else
        printf("FAIL unit/embed/error: no error for an odd L\n");
    carlo_close(rt);
    return 0;
}
