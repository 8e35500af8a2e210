import { type DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { TerminusModule } from '@nestjs/terminus';
import { MemoryLockBackend, RedisLockBoardModule, RedisLockModule } from 'nestjs-redis-lock';
import { Data, SAMPLE_OPTIONS, type SampleOptions } from './data';
import { JobsController } from './jobs/jobs.controller';
import { QueueService } from './jobs/queue.service';
import { ReportJob } from './jobs/report.job';
import { BoardGuard } from './ops/board.guard';
import { OpsController } from './ops/ops.controller';
import { OrdersController } from './orders/orders.controller';
import { OrdersService } from './orders/orders.service';
import { CatalogService } from './products/catalog.service';
import { ProductsController } from './products/products.controller';
import { StockService } from './products/stock.service';

@Module({})
export class AppModule {
  static register(options: SampleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        // Without Redis the locks are kept in this process: they then exclude only within it.
        RedisLockModule.forRoot({
          ...(options.redisUrl === undefined
            ? { client: new MemoryLockBackend() }
            : { url: options.redisUrl }),
          defaults: { ttl: 15_000 },
          // Holders and waiters are then shown by this name on the lock board (letters, digits, - _ . only).
          instanceName: options.instance.replace(/[^\w.-]/g, '-').slice(0, 40),
        }),
        // Who holds which lock, since when, and who waits: a page at /locks (read-only).
        RedisLockBoardModule.forRoot({ path: 'locks', guard: BoardGuard }),
        ScheduleModule.forRoot(),
        TerminusModule,
      ],
      controllers: [OrdersController, ProductsController, JobsController, OpsController],
      providers: [
        { provide: SAMPLE_OPTIONS, useValue: options },
        Data,
        OrdersService,
        StockService,
        CatalogService,
        ReportJob,
        QueueService,
        BoardGuard,
      ],
    };
  }
}
