import {
  Controller,
  DefaultValuePipe,
  Delete,
  Get,
  HttpCode,
  Param,
  ParseIntPipe,
  Post,
  Query,
} from '@nestjs/common';
import { CatalogService, type Product } from './catalog.service';
import { type Reservation, StockService } from './stock.service';

@Controller('products')
export class ProductsController {
  constructor(
    private readonly catalog: CatalogService,
    private readonly stock: StockService,
  ) {}

  /** Cached read; on a miss one caller per product loads from the database. */
  @Get(':id')
  get(@Param('id') id: string): Promise<Product> {
    return this.catalog.get(id);
  }

  @Get(':id/unlocked')
  getUnlocked(@Param('id') id: string): Promise<Product> {
    return this.catalog.getUnlocked(id);
  }

  /** Drops the cached entry and the hit counter, so the next read is a cold miss. */
  @Delete(':id/cache')
  @HttpCode(204)
  evict(@Param('id') id: string): Promise<void> {
    return this.catalog.evict(id);
  }

  @Post(':id/reserve')
  @HttpCode(200)
  reserve(@Param('id') id: string): Promise<Reservation> {
    return this.stock.reserve(id);
  }

  @Post(':id/reserve-unlocked')
  @HttpCode(200)
  reserveUnlocked(@Param('id') id: string): Promise<Reservation> {
    return this.stock.reserveUnlocked(id);
  }

  @Post(':id/restock')
  @HttpCode(204)
  restock(@Param('id') id: string, @Query('units', new DefaultValuePipe(10), ParseIntPipe) units: number) {
    return this.stock.restock(id, units);
  }

  @Get(':id/stats')
  async stats(@Param('id') id: string) {
    return {
      product: id,
      ...(await this.stock.level(id)),
      databaseHits: await this.catalog.databaseHits(id),
    };
  }
}
