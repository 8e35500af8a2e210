import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { OrdersService, type PaymentResult } from './orders.service';

@Controller('orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  /** Paying twice concurrently, through any instances, charges once. */
  @Post(':id/pay')
  @HttpCode(200)
  pay(@Param('id') id: string): Promise<PaymentResult> {
    return this.orders.pay(id);
  }

  /** The unlocked twin: concurrent calls can charge the same order several times. */
  @Post(':id/pay-unlocked')
  @HttpCode(200)
  payUnlocked(@Param('id') id: string): Promise<PaymentResult> {
    return this.orders.payUnlocked(id);
  }

  @Get(':id')
  async get(@Param('id') id: string): Promise<{ order: string; charges: number }> {
    return { order: id, charges: await this.orders.charges(id) };
  }
}
