import { Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { QueueService } from './queue.service';
import { ReportJob } from './report.job';

@Controller()
export class JobsController {
  constructor(
    private readonly report: ReportJob,
    private readonly queue: QueueService,
  ) {}

  /** Which instance built the report of each slot: one run per slot, whichever instance won. */
  @Get('jobs/report')
  runs() {
    return this.report.runs();
  }

  @Post('queue/:ticket')
  @HttpCode(200)
  serve(@Param('ticket') ticket: string) {
    return this.queue.serve(ticket);
  }

  @Get('queue')
  served() {
    return this.queue.served();
  }

  @Delete('queue')
  @HttpCode(204)
  reset() {
    return this.queue.reset();
  }
}
