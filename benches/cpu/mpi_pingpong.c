/* Same-node MPI bandwidth for the halo model (issue 14): ping-pong of 8 KiB .. 4 MiB
 * messages between ranks 0 and 1, one-way time and bandwidth.
 *   mpicc -O2 benches/cpu/mpi_pingpong.c -o /tmp/pingpong
 *   mpirun --allow-run-as-root -np 2 /tmp/pingpong                                  */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0) fprintf(stderr, "pingpong: run with 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    const int max = 4 << 20;
    char *buf = malloc(max);
    memset(buf, 1, max);
    if (rank == 0) printf("%10s %12s %10s\n", "bytes", "one-way us", "GB/s");
    for (int n = 8 << 10; n <= max; n *= 4) {
        int reps = n >= (1 << 20) ? 50 : 200;
        for (int warm = 0; warm < 2; warm++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < reps; i++) {
                if (rank == 0) {
                    MPI_Send(buf, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
                }
            }
            double one_way = (MPI_Wtime() - t0) / (2.0 * reps);
            if (warm && rank == 0) printf("%10d %12.1f %10.2f\n", n, one_way * 1e6, n / one_way / 1e9);
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
