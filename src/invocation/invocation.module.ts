import { Module } from '@nestjs/common';
import { StatelessInvoker } from './stateless-invoker.service';

@Module({ providers: [StatelessInvoker], exports: [StatelessInvoker] })
export class InvocationModule {}
